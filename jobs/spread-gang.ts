/**
 * A gang across hosts (placement spread): one host job per host, each with its cards, the global
 * world and its first rank; rank 0's part leads the attempt. Pure helpers both the scheduler and
 * the workers use, so they agree on the lease owner and the rendezvous secret without a message.
 */
import { createHmac } from 'node:crypto';

export interface GangPlacement {
  experiment: string;
  block: number;
  attempt: number;
  epoch: number;
  host: string;
  cards: string[];
  world?: number;
  first_rank?: number;
}

/** True when the gang has ranks on other hosts than this part's. */
export function isSpread(job: Pick<GangPlacement, 'cards' | 'world'>): boolean {
  return job.world !== undefined && job.world > job.cards.length;
}

/** The part holding rank 0: it publishes the rendezvous and commits the block for every part. */
export function leadsGang(job: Pick<GangPlacement, 'first_rank'>): boolean {
  return (job.first_rank ?? 0) === 0;
}

/**
 * The owner of a spread gang's leases: every part renews its own cards under the gang's one
 * epoch, so the owner cannot be a host; it is the block, which every part's payload names.
 */
export function spreadLeaseOwner(experiment: string, block: number): string {
  return `${experiment}.b${block}`;
}

/** Who renews this part's leases: its host, or the block for a spread gang. */
export function leaseOwnerOf(job: GangPlacement): string {
  return isSpread(job) ? spreadLeaseOwner(job.experiment, job.block) : job.host;
}

/**
 * The attempt's rendezvous secret: an HMAC of the attempt under the cluster secret, which the
 * scheduler and the workers hold and Redis never sees — so the secret is never stored anywhere
 * either, and a rank of another attempt (or anyone who reached the port) cannot join.
 */
export function rendezvousSecret(
  clusterSecret: Buffer,
  job: Pick<GangPlacement, 'experiment' | 'block' | 'attempt' | 'epoch'>,
): string {
  return createHmac('sha256', clusterSecret)
    .update(`orch-rendezvous-v1\0${job.experiment}\0${job.block}\0${job.attempt}\0${job.epoch}`)
    .digest('hex');
}
