/**
 * Executes one attempt of one block on its leased gang (docs/ARCHITECTURE.md "One toggle, YAML
 * to CUDA"): validate the payload, confirm the lease, check the cards for foreign processes, start
 * one rank per card through the RankRunner seam (worker/rank-runner.ts), run the identity gates,
 * then the reps in the planned order, stream every line, and commit the block once, fenced by the
 * epoch (store/lua/commit-block.lua).
 *
 * Fate of the gang: the first failure wins and kills every rank at once — a rank that exits, a
 * renew that fails (lease expired, released or revoked), a revocation message, a foreign process
 * (foreign_process: fail), a request that times out. The leases are released on every path, so
 * the scheduler's next grant (or the gang's other hosts' next renew) sees the cards free.
 *
 * Every planned rep ends as one of: committed result; failed entry with this attempt's reason
 * (the block failed; a later attempt that commits deletes it); failed entry "not run" (graceful
 * stop: committed with the measured reps; under Slurm, `stopRequeues`, the attempt is abandoned
 * instead and the block tried again elsewhere, so no rep is left not run when an allocation ends);
 * failed entry "cancelled" (`orch cancel`: the cancel
 * notice aborts the rep in flight — a half rep is not measured — and the block commits what it
 * measured under its still-held epoch, before the scheduler revokes the gang).
 */

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { type BlockJob, BlockJobSchema } from '../jobs/block-job.ts';
import type { BlockOutcome } from '../jobs/block-outcome.ts';
import type { Card } from '../jobs/card.ts';
import { kindOf } from '../jobs/error-codes.ts';
import { OrchError } from '../jobs/errors.ts';
import type { MachineRecord } from '../jobs/machine-record.ts';
import { blockReps } from '../jobs/rep-ref.ts';
import type { SlurmProvenance } from '../jobs/slurm-allocation.ts';
import { isSpread, leaseOwnerOf } from '../jobs/spread-gang.ts';
import type { GangStaging } from '../store/gang-staging.ts';
import { toJobError } from '../store/job-error.ts';
import type { LeaseStore } from '../store/lease-store.ts';
import type { RepProgress } from '../store/rep-progress.ts';
import type { CommitInput, ResultStore } from '../store/result-store.ts';
import { advertiseAddress } from './advertise-address.ts';
import { BlockCommit } from './block-commit.ts';
import type { EventStream } from './event-stream.ts';
import { ForeignGuard } from './foreign-guard.ts';
import type { ForeignProcessProbe } from './foreign-processes.ts';
import { GangContext } from './gang-context.ts';
import { GangFate, LeaseLostError } from './gang-fate.ts';
import { GangGates } from './gang-gates.ts';
import { GangRanks } from './gang-ranks.ts';
import { LeaseKeeper } from './lease-keeper.ts';
import type { RunningPart } from './lease-message-check.ts';
import { LiveProgress } from './live-progress.ts';
import { readMachineRecord } from './machine-record.ts';
import type { RankRunner } from './rank-runner.ts';
import { RepMeasure } from './rep-measure.ts';
import { RepPipeline } from './rep-pipeline.ts';
import { SpreadPart } from './spread-part.ts';

export interface ExecutorOptions {
  host: string;
  /** this worker's cards by id */
  cards: Map<string, Card>;
  /** directory of the per-card flock files (the host guard) */
  lockDir: string;
  leaseTtlMs: number;
  renewEveryMs: number;
  /** longest wait for one answer of a rank (a hung rank fails the block) */
  requestTimeoutMs: number;
  /** foreign_process: wait — how often to look again */
  foreignPollMs: number;
  /** after stdin closes, how long a rank may take to exit before SIGKILL */
  closeGraceMs: number;
  /** the cluster secret, from which each attempt's rendezvous secret is made (jobs/spread-gang.ts) */
  rendezvousKey?: Buffer;
  /** this host's address for a spread gang's rank 0 (default: advertise-address.ts) */
  advertise?: string;
  /** a spread gang's longest wait for another host's part (rendezvous, staging, commit); default 60 s */
  gangWaitMs?: number;
  /** the Slurm allocation the worker runs in: each block-start event names it (the report's provenance) */
  slurm?: SlurmProvenance;
}

export interface ExecutorDeps {
  leases: LeaseStore;
  results: ResultStore;
  runner: RankRunner;
  probe: ForeignProcessProbe;
  /** the experiment's event stream */
  events: (experiment: string) => EventStream;
  /** the running attempts' live count of measured reps (store/rep-progress.ts) */
  progress: RepProgress;
  log: Logger;
  /** true once the worker is stopping (SIGTERM): finish the rep in flight, run no more */
  stopping: () => boolean;
  /** why the worker stops (the allocation's end, orch slurm down, Slurm's SIGTERM), for a block handed back */
  stopCause?: () => string;
  /**
   * On that stop, abandon the attempt after the rep in flight (WORKER_STOPPING, transient: the
   * scheduler tries the whole block again elsewhere) instead of committing a part of it. A worker
   * under Slurm does: its allocation ends for good, and the block's arms stay balanced.
   */
  stopRequeues?: boolean;
  /** where a spread gang's parts meet (needed only for gangs across hosts) */
  staging?: GangStaging;
  /** the host and its GPUs as a block starts, for the block-start event (default: worker/machine-record.ts) */
  machine?: (cards: Card[]) => Promise<MachineRecord>;
}

/** The card's flock file: the card id with anything but [A-Za-z0-9_.@-] replaced by '_'. */
export function cardLockPath(lockDir: string, card: string): string {
  return join(lockDir, `${card.replace(/[^A-Za-z0-9_.@-]/g, '_')}.lock`);
}

export class BlockExecutor {
  /** running gangs by epoch: the revocation listener aborts them */
  private readonly active = new Map<number, GangRun>();

  constructor(
    private readonly opts: ExecutorOptions,
    private readonly deps: ExecutorDeps,
  ) {
    mkdirSync(opts.lockDir, { recursive: true });
  }

  /** Runs one host job's payload; throws the error whose message becomes BullMQ's failedReason. */
  async execute(data: unknown): Promise<BlockOutcome> {
    const parsed = BlockJobSchema.safeParse(data);
    if (!parsed.success) {
      throw toJobError(new OrchError('BLOCK_PAYLOAD_INVALID', `invalid block payload: ${formatIssues(parsed.error)}`));
    }
    const job = parsed.data;
    if (job.host !== this.opts.host) {
      throw toJobError(
        new OrchError(
          'BLOCK_WRONG_HOST',
          `block job for host "${job.host}" reached the worker of host "${this.opts.host}"`,
        ),
      );
    }
    const foreignCards = job.cards.filter((c) => !this.opts.cards.has(c));
    if (foreignCards.length > 0) {
      throw toJobError(
        new OrchError(
          'BLOCK_FOREIGN_CARDS',
          `cards ${foreignCards.join(', ')} are not cards of host ${this.opts.host} (it has ${[...this.opts.cards.keys()].join(', ')})`,
        ),
      );
    }
    const run = new GangRun(job, this.opts, this.deps);
    this.active.set(job.epoch, run);
    try {
      return await run.run();
    } finally {
      this.active.delete(job.epoch);
    }
  }

  /** The running gang parts a revoke-channel message for `cards` under `epochs` names. */
  matching(cards: string[], epochs: number[]): RunningPart[] {
    return [...this.active]
      .filter(([epoch, run]) => epochs.includes(epoch) && run.job.cards.some((c) => cards.includes(c)))
      .map(([epoch, run]) => ({ experiment: run.job.experiment, epoch, cards: run.job.cards }));
  }

  /** A revocation of `cards` under `epochs`: the matching gangs fail and their ranks die now. */
  revoked(cards: string[], epochs: number[], reason: string): void {
    for (const [epoch, run] of this.active) {
      if (epochs.includes(epoch) && run.job.cards.some((c) => cards.includes(c))) {
        run.fail(
          new LeaseLostError(
            `lease of block ${run.job.block} attempt ${run.job.attempt} (epoch ${epoch}) revoked: ${reason}`,
          ),
        );
      }
    }
  }

  /** A cancel notice for `cards` under `epochs` (store/cancel-notice.ts): the matching gangs stop gracefully. */
  cancelled(cards: string[], epochs: number[], reason: string): void {
    for (const [epoch, run] of this.active) {
      if (epochs.includes(epoch) && run.job.cards.some((c) => cards.includes(c))) run.cancel(reason);
    }
  }

  /** Every running gang fails and its ranks die now: the worker's stop ran out of time (Redis gone). */
  abortAll(reason: string): void {
    for (const [epoch, run] of this.active) {
      run.fail(
        new LeaseLostError(`block ${run.job.block} attempt ${run.job.attempt} (epoch ${epoch}) aborted: ${reason}`),
      );
    }
  }

  get running(): number {
    return this.active.size;
  }
}

/**
 * One attempt of one block, its rooms wired: the fate (first failure wins, cancel), the ranks, the
 * foreign-process guard, the gates, the rep pipeline and the commit. `run` is their order.
 */
class GangRun {
  private readonly gang: GangContext;
  private readonly fate: GangFate;
  private readonly ranks: GangRanks;
  private readonly foreign: ForeignGuard;
  private readonly pipeline: RepPipeline;
  private readonly progress: LiveProgress;
  private readonly committer: BlockCommit;

  constructor(
    readonly job: BlockJob,
    private readonly opts: ExecutorOptions,
    private readonly deps: ExecutorDeps,
  ) {
    const log = deps.log.child({
      experiment: job.experiment,
      block: job.block,
      attempt: job.attempt,
      epoch: job.epoch,
    });
    this.gang = new GangContext(job, opts.host, deps.events(job.experiment), log);
    const spread = isSpread(job);
    this.fate = new GangFate(this.gang, spread, () => this.ranks.kill());
    let part: SpreadPart | null = null;
    if (spread) {
      if (!deps.staging)
        throw new OrchError(
          'BLOCK_PAYLOAD_INVALID',
          `block ${job.block} spreads across hosts, which this worker was not set up for (no staging store)`,
        );
      const waitMs = opts.gangWaitMs ?? 60_000;
      part = new SpreadPart(
        job,
        { host: opts.host, advertise: opts.advertise ?? advertiseAddress(), waitMs, pollMs: 50 },
        deps.staging,
        deps.results,
        (p) => this.fate.race(p),
      );
    }
    const lockPaths = job.cards.map((c) => cardLockPath(opts.lockDir, c));
    this.ranks = new GangRanks(
      this.gang,
      {
        cards: opts.cards,
        lockPaths,
        runner: deps.runner,
        requestTimeoutMs: opts.requestTimeoutMs,
        closeGraceMs: opts.closeGraceMs,
        rendezvousKey: opts.rendezvousKey,
        staging: deps.staging,
      },
      this.fate,
      part,
    );
    this.foreign = new ForeignGuard(
      this.gang,
      { cards: opts.cards, lockPaths, probe: deps.probe, pollMs: opts.foreignPollMs, stopping: deps.stopping },
      this.fate,
    );
    this.progress = new LiveProgress(deps.progress, this.gang);
    this.pipeline = new RepPipeline(
      this.gang,
      this.ranks,
      new RepMeasure(this.gang, this.ranks),
      this.foreign,
      this.fate,
      this.progress,
      { spread, stopping: deps.stopping },
    );
    this.committer = new BlockCommit(this.gang, deps.results, this.fate, part);
  }

  /** First failure wins: every rank is killed at once, every await of the attempt rejects with it. */
  fail(err: Error): void {
    this.fate.fail(err);
  }

  /** The cancel notice (worker/gang-fate.ts): commit what was measured, or fail before the rep loop. */
  cancel(reason: string): void {
    this.fate.cancel(reason);
  }

  async run(): Promise<BlockOutcome> {
    const { job, fate } = this;
    const planned = blockReps(job.block, job.sequence);
    // the local lease deadline: ranks die when no renew succeeded within the TTL, even if Redis never answers
    const keeper = new LeaseKeeper({
      ttlMs: this.opts.leaseTtlMs,
      everyMs: this.opts.renewEveryMs,
      renew: () => this.renew(),
      onLost: (why) =>
        fate.fail(new LeaseLostError(`${why} (block ${job.block} attempt ${job.attempt}, epoch ${job.epoch})`)),
    });
    let committed = false;
    this.gang.log.info({ cards: job.cards, reps: planned.length }, 'block attempt starting');
    try {
      // read while the leases are taken: nvidia-smi takes a moment, and never fails (it says why instead)
      const reading = (this.deps.machine ?? readMachineRecord)(
        job.cards.flatMap((id) => this.opts.cards.get(id) ?? []),
      );
      await fate.race(keeper.start());
      const machine = await fate.race(reading);
      this.gang.events.worker(this.gang.tags(''), 'block-start', {
        started_ms: Date.now(),
        cards: job.cards,
        sequence: job.sequence,
        machine,
        ...(this.opts.slurm ? { slurm: this.opts.slurm } : {}),
      });
      // the attempt's timeline, committed with it (jobs/commit-record.ts): card time reads it, not the stream
      const timeline: NonNullable<CommitInput['timeline']> = { started: Date.now() };
      await this.foreign.guard([]);
      await this.ranks.start();
      timeline.ready = Date.now();
      timeline.startup = this.ranks.startups(timeline.started);
      const gating = new GangGates(this.gang, this.ranks);
      const gates = await gating.run();
      timeline.gated = Date.now();
      const measured = await this.pipeline.run(planned, gating.blocked);
      this.requeueIfStopped(measured.stoppedAt, planned.length);
      fate.closing = true;
      const outcome = await this.committer.commit(planned, measured, gates, {
        timeline,
        ranks: this.ranks.origins(),
        hosts: [{ host: this.opts.host, machine, ...(this.opts.slurm ? { slurm: this.opts.slurm } : {}) }],
      });
      committed = true;
      return outcome;
    } catch (caught) {
      const err = fate.failure ?? (caught as Error);
      fate.fail(err);
      // with the last lines of the ranks that failed: the report and the terminal show why
      if (!committed) await this.committer.failAll(planned, err, this.ranks.failedOutputs());
      this.gang.events.worker(this.gang.tags(''), 'block-failed', { reason: err.message });
      // a user's input names its code, so the experiment's reason (and its exit code, 2) says it
      // was the user's (orchestrator/results/stopped-experiment.ts)
      throw toJobError(
        err,
        err instanceof OrchError && kindOf(err) === 'user-input' ? `${err.code}: ${err.message}` : undefined,
      );
    } finally {
      keeper.stop();
      fate.closing = true;
      await this.ranks.end(fate.failure !== null || fate.aborted);
      await this.deps.leases
        .release({ cards: job.cards, epoch: job.epoch })
        .catch((err: unknown) => this.gang.log.warn({ err }, 'leases not released; they expire with their TTL'));
      await Promise.all([this.gang.events.flush(), this.progress.flush()]);
    }
  }

  /** A stop (not a cancel) cut the block short, and this worker hands such blocks back rather than committing a part. */
  private requeueIfStopped(stoppedAt: number | null, planned: number): void {
    if (stoppedAt === null || this.fate.cancelReason !== null || this.deps.stopRequeues !== true) return;
    const { job } = this;
    const cause = this.deps.stopCause?.() ?? 'its allocation ends, or orch slurm down';
    throw new OrchError(
      'WORKER_STOPPING',
      `the worker of host ${this.opts.host} stopped (${cause}) after ${stoppedAt} of ${planned} reps of block ${job.block} attempt ${job.attempt}: the attempt is abandoned, none of its reps counted, and the block tried again on another host`,
    );
  }

  /** Extends the gang's leases; a refusal is a lost gang. */
  private async renew(): Promise<void> {
    if (this.fate.failure) return;
    const r = await this.deps.leases.renew({
      cards: this.job.cards,
      owner: leaseOwnerOf({ ...this.job, host: this.opts.host }),
      epoch: this.job.epoch,
      ttlMs: this.opts.leaseTtlMs,
    });
    if (!r.ok) {
      this.fate.fail(
        new LeaseLostError(
          `lease of card ${r.card} lost (${r.reason}) by block ${this.job.block} attempt ${this.job.attempt} (epoch ${this.job.epoch})`,
        ),
      );
    }
  }
}

/** `steps: Too small: expected number to be >=1; sequence[1]: unknown arm "C"` */
function formatIssues(err: z.ZodError): string {
  return err.issues
    .map((i) => {
      const path = i.path
        .map((k, n) => (typeof k === 'number' ? `[${k}]` : n === 0 ? String(k) : `.${String(k)}`))
        .join('');
      return `${path || '(root)'}: ${i.message}`;
    })
    .join('; ');
}
