/**
 * A block's lifecycle, driven by the leader: the grant pass starts one processor per block it
 * reads waiting or running (`drive`): wait for a grant (grant-loop.ts) → record the attempt →
 * observe it (attempt-observer.ts) → end the block, or wait again for attempt + 1 when
 * retry-decision.ts says so. A processor that finds its block running re-attaches to the attempt
 * in flight (a new term after failover). The block's state in Redis is the whole record: there
 * is no job per block (at scale the two BullMQ jobs per block, this one and its host job, were
 * most of the scheduler's work, and delivering 1 500 block jobs kept cards idle for a second).
 *
 * One processor per block and term in this process. Across processes (a deposed leader still
 * running), every change of the block's state is a compare-and-set on (phase, attempt) in Lua:
 * the loser of a race re-reads the state and follows it, and a grant whose attempt was recorded
 * by another processor is undone.
 *
 * A processor that fails on Redis (full: OOM, or not answering) leaves its block as it is and
 * its block gets no new processor before a capped exponential back-off (failure-backoff.ts): a
 * lost attempt whose end could not be written was re-attached, found lost and failed again in a
 * tight loop. The log says so once per change, not per retry.
 */

import type { Logger } from 'pino';
import { cancelledRep } from '../../jobs/failed-rep.ts';
import { messageOf } from '../../jobs/message-of.ts';
import { plannedReps, repKey } from '../../jobs/rep-ref.ts';
import { type BlockState, type ExperimentRecord, TERMINAL_BLOCK_PHASES } from '../../store/experiment-store.ts';
import { isRedisCondition } from '../../store/redis-oom.ts';
import { recordStepHistory, StepHistorySampler } from '../../store/step-history.ts';
import { gangWithJobs, type Outcome, observeAttempt } from './attempt-observer.ts';
import { blocksLeftEmpty, FIRST_BLOCK, isAutoFirstBlock, sizeLaterBlocks } from './auto-block-sizing.ts';
import { plannedBlockMs, sizedBlockMs, workloadKey } from './expected-duration.ts';
import type { GrantLoop } from './grant-loop.ts';
import { retryDecision } from './retry-decision.ts';
import { type BlockRef, blockKey, revokeGang, type SchedulerContext, type Term } from './scheduler-context.ts';
import { sequentialStop } from './sequential-stop.ts';

/** The back-off channel of block processors (failure-backoff.ts). */
const PROCESSOR = 'scheduler: block processor';

export interface BlockEnd {
  phase: BlockState['phase'];
  reason: string | null;
}

/** The processor's term ended: it stops acting (the next term's processor re-attaches). */
const DEPOSED = Symbol('deposed');
type Run = Promise<BlockEnd | typeof DEPOSED>;
/** Where a processor goes on from: the block ended, or the state to act on next. */
type Step = { end: BlockEnd } | { current: BlockState | null };

export class BlockLifecycle {
  /** the live processor of each block key in this process, with its term */
  private readonly live = new Map<string, { run: Run; term: Term }>();
  /** live processors per experiment: when the last one ends, the grant pass looks at it again (settling) */
  private readonly perExperiment = new Map<string, number>();
  private readonly sampler = new StepHistorySampler();

  constructor(
    private readonly ctx: SchedulerContext,
    private readonly grants: GrantLoop,
  ) {}

  /**
   * Starts the processor of a block the grant pass read in `st` (waiting, or running: a new term
   * re-attaches to the attempt in flight), unless one of this term runs here already. A
   * processor of an ended term may still be finishing a command; it acts no more, and every
   * change it could still make is a compare-and-set that this term's processor wins or follows.
   */
  drive(experiment: string, st: BlockState, term: Term): void {
    const key = blockKey(experiment, st.block);
    const current = this.live.get(key);
    if ((current && !current.term.aborted) || term.aborted) return;
    // in its back-off after a failure: the pass at its end starts the processor (processorFailed)
    if (this.ctx.backoff.waitMs(key) > 0) return;
    const run: Run = this.run({ experiment, block: st.block }, term, st).then(
      (end) => {
        if (end !== DEPOSED) this.ctx.backoff.succeeded(PROCESSOR, key);
        return end;
      },
      async (err: unknown): Promise<typeof DEPOSED> => {
        await this.processorFailed(experiment, st.block, term, err);
        return DEPOSED;
      },
    );
    const entry = { run, term };
    this.live.set(key, entry);
    this.perExperiment.set(experiment, (this.perExperiment.get(experiment) ?? 0) + 1);
    void run.then(() => {
      if (this.live.get(key) === entry) this.live.delete(key);
      const left = (this.perExperiment.get(experiment) ?? 1) - 1;
      if (left > 0) {
        this.perExperiment.set(experiment, left);
        // however the first block ended (its processor failing too), auto sizing's later blocks
        // wait on it: the pass reads the blocks again (auto-block-sizing.ts)
        if (st.block === FIRST_BLOCK) this.grants.reread(experiment);
      } else {
        // the last one here: the pass reads the experiment again (and settles it when all ended)
        this.perExperiment.delete(experiment);
        this.grants.reread(experiment);
      }
    });
  }

  /**
   * A processor threw (a bug, or a store that refused it): its block ends failed with the error
   * as the reason, and a gang it held is revoked, so the block never waits for a processor that
   * is gone. When even that cannot be written (Redis unreachable), the block keeps its state and
   * the next pass starts a processor for it again.
   */
  private async processorFailed(experiment: string, block: number, term: Term, err: unknown): Promise<void> {
    const key = blockKey(experiment, block);
    const retryLater = (e: unknown) => {
      const delay = this.ctx.backoff.failed(PROCESSOR, key, e, { key });
      // the pass after the back-off reads the block again and starts its processor
      setTimeout(() => this.grants.reread(experiment), delay).unref();
    };
    // Redis refused or did not answer: the block's state is still right, only not moved on
    if (isRedisCondition(err)) return retryLater(err);
    const reason = `the block's processor failed: ${messageOf(err)}`;
    this.ctx.log.error({ err, key }, 'block processor failed; the block ends failed');
    if (term.aborted) return;
    try {
      const st = await this.ctx.store.block(experiment, block);
      if (!st || TERMINAL_BLOCK_PHASES.has(st.phase)) return;
      if (st.gang.length > 0) await revokeGang(this.ctx.leases, st.gang, reason);
      const w = await this.ctx.store.transitionBlock(experiment, st, {
        ...st,
        phase: 'failed',
        reason,
        why: null,
        ended_at: Date.now(),
      });
      if (!w.written) this.ctx.log.warn({ key }, 'block state moved while failing it; the next pass reads it again');
    } catch (e: unknown) {
      retryLater(e);
    }
  }

  private async run({ experiment, block }: BlockRef, term: Term, read: BlockState): Run {
    const key = blockKey(experiment, block);
    const log = this.ctx.log.child({ experiment, block });
    // the grant loop's copy: spec and plan never change after submit, but for the later blocks of
    // auto sizing, read again once granted (auto-block-sizing.ts)
    let exp = await this.grants.experiment(experiment);
    if (!exp) throw new Error(`experiment ${experiment} is not registered`);
    // the state the grant pass read: a stale one only loses the compare-and-set of the attempt
    // record and is read again
    let st: BlockState | null = read;
    for (;;) {
      if (!st) throw new Error(`experiment ${experiment} has no state for block ${block}`);
      if (term.aborted) return DEPOSED;
      if (TERMINAL_BLOCK_PHASES.has(st.phase)) return { phase: st.phase, reason: st.reason };
      // this processor recorded the attempt just now: no host job of it can exist yet
      let recorded = false;
      if (st.phase === 'running' && st.gang.length > 0) {
        // said once, not at each try of a back-off
        if (this.ctx.backoff.failures(key) === 0)
          log.info({ attempt: st.attempt }, 're-attaching to the attempt in flight');
      } else {
        const g = await this.grantAttempt(exp, st, term, log);
        if (g === DEPOSED) return DEPOSED;
        if ('end' in g) return g.end;
        if ('current' in g) {
          st = g.current;
          continue;
        }
        st = g.granted;
        recorded = true;
        // granted only once the first block ended, and with it its sizing: the job takes the sized
        // sequence; a record read again is admitted again before any job (attempt-observer.ts)
        if (exp.plan.reps_per_block === 'auto' && block !== FIRST_BLOCK)
          exp = (await this.ctx.store.get(experiment)) ?? exp;
      }
      const running: BlockState = st;
      // expected_ms is stored only when measured; backfill still plans an unmeasured block with its
      // guess. A sized block's own measure wins: its grant's estimate came from the registered plan.
      const sized = sizedBlockMs(exp.plan, block);
      const planned = sized ?? running.expected_ms ?? plannedBlockMs(exp.plan, exp.spec, null, block).ms;
      this.grants.attemptStarted(
        key,
        running.gang.flatMap((p) => p.cards),
        (running.granted_at ?? Date.now()) + planned,
        sized !== null || running.expected_ms !== null,
      );
      // a part's end frees its cards (the host released them before ending its job): the grant
      // pass runs on it, not after the attempt's own bookkeeping
      const outcome = await observeAttempt(this.ctx, exp, running, term, {
        recorded,
        partEnded: () => this.grants.kick(),
      });
      this.grants.attemptEnded(key);
      if (outcome.kind === 'deposed' || term.aborted) return DEPOSED;
      const w = await this.attemptEnded(exp, running, outcome, log);
      if ('end' in w) return w.end;
      st = w.current;
    }
  }

  /** Waits for the block's grant and records the attempt: the running state, or what to go on from. */
  private async grantAttempt(
    exp: ExperimentRecord,
    st: BlockState,
    term: Term,
    log: Logger,
  ): Promise<Step | { granted: BlockState } | typeof DEPOSED> {
    const experiment = exp.id;
    const block = st.block;
    const expected = await this.grants.expectedMs(exp, block);
    const got = await this.grants.waitForGrant({
      exp,
      block,
      st,
      expectedMs: expected.ms,
      expectedKnown: expected.known,
    });
    if (term.aborted) return DEPOSED;
    if ('cancelled' in got) return this.endBlock(exp, st, st, 'cancelled', got.cancelled);
    const attempt = st.attempt + 1;
    const next: BlockState = {
      ...st,
      phase: 'running',
      attempt,
      gang: gangWithJobs(experiment, block, attempt, got.gang),
      why: null,
      expected_ms: expected.known ? expected.ms : null,
      granted_at: Date.now(),
    };
    const w = await this.ctx.store.beginAttempt(experiment, st.attempt, next);
    if (!w.written) {
      log.warn(
        { attempt, stored: w.current && { phase: w.current.phase, attempt: w.current.attempt } },
        'block state moved since it was read: grant undone',
      );
      await revokeGang(
        this.ctx.leases,
        got.gang,
        `grant undone: block ${block} attempt ${attempt} was recorded by another processor`,
      );
      return { current: w.current };
    }
    log.info({ attempt, gang: next.gang }, 'granted');
    return { granted: next };
  }

  /** Records how an attempt ended, and ends the block or puts it back to waiting (a retry). */
  private async attemptEnded(
    exp: ExperimentRecord,
    running: BlockState,
    outcome: Exclude<Outcome, { kind: 'deposed' }>,
    log: Logger,
  ): Promise<Step> {
    const key = blockKey(exp.id, running.block);
    const record = (o: string, reason?: string) => ({
      ...running,
      attempts: [
        ...running.attempts,
        { attempt: running.attempt, gang: running.gang, outcome: o, ...(reason === undefined ? {} : { reason }) },
      ],
    });
    if (outcome.kind === 'committed') {
      // the estimate's input beside the block's end, not before it: a lost update of the
      // history only makes one estimate staler, and never fails the block; a sample of the
      // ended blocks (StepHistorySampler), not every one
      const history = this.sampler.take(workloadKey(exp.spec))
        ? this.recordStepTimes(exp, running.block).catch((err: unknown) =>
            log.warn({ err }, 'step history not updated'),
          )
        : null;
      // before the end: a first block seen ended has its sizing, and the blocks it emptied are
      // stopped, while the later blocks still take no card (auto-block-sizing.ts)
      if (isAutoFirstBlock(exp, running.block)) await this.sizeAndStopEmptied(exp, log);
      const w = await this.endBlock(exp, running, record('committed'), 'done', null);
      await history;
      if ('end' in w) await this.look(exp, log);
      return w;
    }
    if (outcome.kind === 'cancelled' || outcome.kind === 'failed')
      return this.endBlock(exp, running, record(outcome.kind, outcome.reason), outcome.kind, outcome.reason);
    const d = retryDecision(outcome.end, running.attempt, this.ctx.tuning.maxAttempts, running.attempts);
    const ended = record(d.outcome, outcome.end.reason);
    if (!d.retry) return this.endBlock(exp, running, ended, 'failed', d.reason);
    if (this.ctx.backoff.failures(key) === 0) log.warn({ attempt: running.attempt, reason: d.reason }, 'attempt lost');
    const waiting: BlockState = { ...ended, phase: 'waiting', gang: [], reason: d.reason };
    const t = await this.ctx.store.transitionBlock(exp.id, running, waiting);
    this.ctx.backoff.succeeded(PROCESSOR, key);
    this.grants.reread(exp.id);
    return { current: t.written ? waiting : t.current };
  }

  /**
   * Ends a block (compare-and-set from `from`): every planned rep that no attempt committed is
   * recorded as not run (as cancelled, when the block ends cancelled). When the stored state
   * moved, nothing is written and it comes back. Planned from `exp`, this processor's copy: for a
   * later block of auto sizing cancelled while it waited, the registered plan, fewer reps than the
   * sized block holds; the settling records the rest by the block's phase (experiment-settling.ts).
   */
  private async endBlock(
    exp: ExperimentRecord,
    from: BlockState,
    st: BlockState,
    phase: 'done' | 'failed' | 'cancelled',
    reason: string | null,
  ): Promise<Step> {
    const final: BlockState = { ...st, phase, reason, why: null, ended_at: Date.now() };
    const w = await this.ctx.store.transitionBlock(exp.id, from, final);
    if (!w.written) return { current: w.current };
    if (phase !== 'done') {
      const measured = await this.ctx.results.measuredFields(exp.id);
      const notRun = plannedReps(exp.plan, st.block)
        .filter((r) => !measured.has(repKey(r)))
        .map((r) =>
          phase === 'cancelled' ? { ...r, ...cancelledRep(reason) } : { ...r, reason: `not run: ${reason ?? phase}` },
        );
      await this.ctx.results.failReps(exp.id, st.block, st.attempt, notRun);
    }
    this.ctx.log.info({ experiment: exp.id, block: st.block, phase, reason }, 'block ended');
    return { end: { phase, reason } };
  }

  /**
   * Auto sizing, the first block committed: its sizing written (unless a leader before this one
   * wrote it), then the registered blocks it left without reps end stopped. Both idempotent.
   */
  private async sizeAndStopEmptied(exp: ExperimentRecord, log: Logger): Promise<void> {
    if (exp.plan.sized === undefined) await sizeLaterBlocks(this.ctx, exp, log);
    const sized = await this.ctx.store.get(exp.id);
    const empty = sized === null ? null : blocksLeftEmpty(sized);
    if (sized !== null && empty !== null) await this.grants.stopWaiting(sized, empty.reason, empty.blocks);
  }

  /** stopping: sequential: the look this block's end made due, and a decisive one stops the blocks still waiting. */
  private async look(exp: ExperimentRecord, log: Logger): Promise<void> {
    const stop = await sequentialStop(this.ctx, exp);
    if (stop === null) return;
    log.info({ reason: stop.reason }, 'sequential experiment decided: its waiting blocks stop');
    await this.grants.stopWaiting(exp, stop.reason);
  }

  /** Folds the ended block's step times into the history: its own planned reps only (reading every result of the experiment per block was quadratic in blocks). */
  private async recordStepTimes(exp: ExperimentRecord, block: number): Promise<void> {
    const results = await this.ctx.results.repResults(exp.id, plannedReps(exp.plan, block).map(repKey));
    const steps = results.flatMap((r) => r.step_ms);
    await recordStepHistory(this.ctx.redis, this.ctx.prefix, workloadKey(exp.spec), steps);
  }
}
