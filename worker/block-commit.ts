/**
 * The end of a block attempt in Redis: its measured reps, gates and probe records committed once,
 * fenced by the epoch (store/lua/commit-block.lua), the planned reps not run recorded as `not run`
 * (graceful stop) or `cancelled`; or, when the attempt failed before committing, every planned rep
 * failed with the attempt's reason. A gang across hosts commits once, from its leading part, every
 * part's results over every part's leases; its other parts stage theirs and wait for that commit.
 *
 * The ranks' lines went to the stream off the measurement path; every one of them is in Redis
 * before the commit that makes the block count, so a reader of a committed block finds them all.
 */

import type { BlockOutcome } from '../jobs/block-outcome.ts';
import { captureFailedReason } from '../jobs/capture-blocker.ts';
import type { GangHost } from '../jobs/commit-record.ts';
import { OrchError } from '../jobs/errors.ts';
import type { RankOrigin } from '../jobs/rank-origin.ts';
import type { RankOutputTail } from '../jobs/rank-output-tail.ts';
import type { RepRef } from '../jobs/rep-ref.ts';
import type { CommitGate, CommitInput, FailedRep, ResultStore } from '../store/result-store.ts';
import type { GangContext } from './gang-context.ts';
import { type GangFate, LeaseLostError } from './gang-fate.ts';
import type { MeasuredReps } from './rep-pipeline.ts';
import type { SpreadPart } from './spread-part.ts';

export class BlockCommit {
  constructor(
    private readonly gang: GangContext,
    private readonly results: ResultStore,
    private readonly fate: GangFate,
    private readonly spread: SpreadPart | null,
  ) {}

  /** Commits what the attempt measured; throws when the commit is refused (a lost lease, another attempt's commit). */
  async commit(
    planned: RepRef[],
    measured: MeasuredReps,
    gates: CommitGate[],
    attempt: { timeline: CommitInput['timeline']; ranks: RankOrigin[]; hosts: GangHost[] },
  ): Promise<BlockOutcome> {
    const { timeline, ranks, hosts } = attempt;
    const { job, host, events, log } = this.gang;
    const { reps, probes } = measured;
    // an arm whose capture failed: its reps are final failures with the blocker, committed with the block
    const blocked: FailedRep[] = measured.blocked.map(({ p, blocker }) => ({
      block: job.block,
      arm: p.arm,
      rep: p.rep,
      position: p.position,
      kind: 'failed',
      reason: captureFailedReason(blocker),
      ...(blocker.others.length === 0 ? {} : { other_blockers: blocker.others }),
    }));
    const notRun = [...this.notRun(planned, measured.stoppedAt), ...blocked];
    await this.fate.race(events.flush());
    if (probes.length > 0) {
      const written = await this.fate.race(
        this.results.commitProbes({
          experiment: job.experiment,
          block: job.block,
          epoch: job.epoch,
          cards: job.cards,
          records: probes,
        }),
      );
      if (!written.written)
        throw new LeaseLostError(
          `probe records of block ${job.block} attempt ${job.attempt} refused: ${written.why}; none of its probes is counted`,
        );
    }
    const outcome = (notRunCount: number): BlockOutcome => ({
      experiment: job.experiment,
      block: job.block,
      attempt: job.attempt,
      epoch: job.epoch,
      measured: reps.length,
      not_run: notRunCount,
      gates: gates.map((g) => ({ arm: g.arm, pass: g.result.pass })),
    });
    if (this.spread !== null && !this.spread.leads) {
      await this.spread.stageAndAwaitCommit({ cards: job.cards, reps, gates, ranks, hosts });
      log.info({ measured: reps.length }, 'part staged; the leading part committed the block');
      return outcome(0);
    }
    const gang =
      this.spread === null
        ? { cards: job.cards, reps, gates, ranks, hosts }
        : await this.spread.gather({ cards: job.cards, reps, gates, ranks, hosts });
    const res = await this.fate.race(
      this.results.commitBlock({
        experiment: job.experiment,
        block: job.block,
        attempt: job.attempt,
        epoch: job.epoch,
        host,
        cards: gang.cards,
        reps: gang.reps,
        notRun,
        gates: gang.gates,
        ranks: gang.ranks,
        hosts: gang.hosts,
        ...(timeline === undefined ? {} : { timeline }),
      }),
    );
    if (this.spread !== null) await this.spread.forget().catch(() => undefined);
    if (!res.committed) {
      if (res.why === 'gone') {
        throw new OrchError(
          'REDIS_DATA_LOST',
          `results of block ${job.block} attempt ${job.attempt} refused: experiment ${job.experiment} no longer exists in Redis (it restarted without its data); nothing was written`,
        );
      }
      throw res.why === 'epoch'
        ? new LeaseLostError(
            `results of block ${job.block} attempt ${job.attempt} refused: card ${res.card} is ${res.holder === null ? 'no longer leased' : `leased under epoch ${res.holder}`}, not epoch ${job.epoch}; none of its reps is counted`,
          )
        : new OrchError(
            'BLOCK_ALREADY_COMMITTED',
            `results of block ${job.block} attempt ${job.attempt} refused: attempt ${res.prior.attempt} (epoch ${res.prior.epoch}, host ${res.prior.host}) already committed this block`,
          );
    }
    events.worker(this.gang.tags(''), 'block-committed', { measured: reps.length, not_run: notRun.length });
    log.info({ measured: reps.length, not_run: notRun.length }, 'block attempt committed');
    return outcome(notRun.length);
  }

  /** The attempt failed before its commit: every planned rep fails with its reason, recorded with the last lines of the ranks that failed (best effort). */
  async failAll(planned: RepRef[], err: Error, outputs: readonly RankOutputTail[] = []): Promise<void> {
    const { job, log } = this.gang;
    const reason = `attempt ${job.attempt} failed: ${err.message}`;
    await this.results
      .failReps(
        job.experiment,
        job.block,
        job.attempt,
        planned.map((p) => ({ ...p, reason })),
        outputs,
      )
      .catch((e: unknown) => log.warn({ err: e }, 'failed reps not recorded'));
  }

  /** The planned reps from `stoppedAt` on: `cancelled` after a cancel notice, else not run (the worker stopped). */
  private notRun(planned: RepRef[], stoppedAt: number | null): FailedRep[] {
    const { job, host } = this.gang;
    const cancelled = this.fate.cancelReason;
    if (stoppedAt === null) return [];
    return planned.slice(stoppedAt).map((p) => ({
      block: job.block,
      arm: p.arm,
      rep: p.rep,
      position: p.position,
      ...(cancelled !== null
        ? { kind: 'cancelled' as const, reason: `cancelled: ${cancelled} (attempt ${job.attempt})` }
        : {
            reason: `not run: the worker of host ${host} was stopped (SIGTERM) before this rep (attempt ${job.attempt})`,
          }),
    }));
  }
}
