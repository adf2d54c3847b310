/**
 * What every room of the scheduler shares: its options, the stores on the leader's connection,
 * the dispatcher, and the leader's term. Built once by scheduler.ts.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { CardRegistry } from '../../store/card-registry.ts';
import type { ExperimentRecord, ExperimentStore, GangPart } from '../../store/experiment-store.ts';
import type { LeaseStore } from '../../store/lease-store.ts';
import type { ResultStore } from '../../store/result-store.ts';
import type { BlockDispatcher } from '../dispatch/block-dispatcher.ts';
import type { FailureBackoff } from './failure-backoff.ts';

export interface SchedulerOptions {
  url: string;
  prefix: string;
  log: Logger;
  leaderTtlMs?: number;
  /** TTL of a freshly granted gang lease, until the worker's renewals take over */
  grantTtlMs?: number;
  /** an attempt whose host stopped heartbeating while its job never ended is lost after this */
  lostAfterMs?: number;
  /** lost attempts re-dispatched at most this many times in all */
  maxAttempts?: number;
  /**
   * The slow re-read for what sends no event: a host that died (its alive key expired while its
   * job never ended), cards registering or leases expiring, a cancel nobody revoked leases for.
   */
  safetyPollMs?: number;
  /** the cluster secret that signs host jobs (jobs/grant.ts); default: from the environment (store/cluster-secret.ts) */
  secret?: Buffer;
  /** the submit token experiments must be signed with (jobs/submit-signature.ts); default: from the environment (store/submit-token.ts) */
  submitToken?: Buffer;
}

export type SchedulerTuning = Required<Omit<SchedulerOptions, 'log' | 'url' | 'prefix' | 'secret' | 'submitToken'>>;

export function schedulerTuning(o: SchedulerOptions): SchedulerTuning {
  return {
    leaderTtlMs: o.leaderTtlMs ?? 3000,
    grantTtlMs: o.grantTtlMs ?? 30_000,
    lostAfterMs: o.lostAfterMs ?? 2000,
    maxAttempts: o.maxAttempts ?? 3,
    safetyPollMs: o.safetyPollMs ?? 1000,
  };
}

export interface SchedulerContext {
  redis: Redis;
  prefix: string;
  log: Logger;
  tuning: SchedulerTuning;
  store: ExperimentStore;
  registry: CardRegistry;
  leases: LeaseStore;
  results: ResultStore;
  dispatcher: BlockDispatcher;
  /** the back-off of loops that fail on Redis, and their one log line per change (failure-backoff.ts) */
  backoff: FailureBackoff;
  /** why the experiment's submission is refused (submit-admission.ts), or null: nothing is planned for a refused one */
  refusal: (exp: ExperimentRecord) => string | null;
}

/** A block of an experiment: what a processor (block-lifecycle.ts) drives. */
export interface BlockRef {
  experiment: string;
  block: number;
}

/** One leadership term: processors of an ended term stop acting and never settle their job. */
export interface Term {
  aborted: boolean;
  /** resolves when the term ends (deposed or stopped) */
  ended: Promise<void>;
  end: () => void;
}

/** A block's key in the scheduler's in-process maps. */
export function blockKey(experiment: string, block: number): string {
  return `${experiment}.b${block}`;
}

/** Revokes every part of a gang (the owning workers kill its ranks at once). */
export async function revokeGang(leases: LeaseStore, gang: Omit<GangPart, 'job'>[], reason: string): Promise<void> {
  for (const p of gang) await leases.revoke({ cards: p.cards, epoch: p.epoch, reason });
}
