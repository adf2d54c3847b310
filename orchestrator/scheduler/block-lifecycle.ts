/**
 * A block's lifecycle, the processor of its job on `blocks`: wait for a grant (grant-loop.ts) →
 * record the attempt → observe it (attempt-observer.ts) → end the block, or wait again for
 * attempt + 1 when retry-decision.ts says so. A processor that finds its block running
 * re-attaches to the attempt in flight (a new leader after failover).
 *
 * One processor per block attempt: a second delivery of a block job whose processor still runs
 * in this process (its BullMQ lock lapsed in a Redis pause, the job stalled and came back) joins
 * that processor and returns its result instead of running beside it. Across processes (a
 * deposed leader still running), every change of the block's state is a compare-and-set on
 * (phase, attempt) in Lua: the loser of a race re-reads the state and follows it, and a grant
 * whose attempt was recorded by another processor is undone.
 */
import type { Job } from 'bullmq';
import { TERMINAL_BLOCK_PHASES, type BlockState, type ExperimentRecord } from '../../store/experiment-store.ts';
import { recordStepHistory } from '../../store/step-history.ts';
import { gangWithJobs, observeAttempt } from './attempt-observer.ts';
import { plannedReps } from './build-block-job.ts';
import { workloadKey } from './expected-duration.ts';
import type { GrantLoop } from './grant-loop.ts';
import { retryDecision } from './retry-decision.ts';
import { blockKey, revokeGang, type BlockJobData, type SchedulerContext, type Term } from './scheduler-context.ts';

export interface BlockEnd {
  phase: BlockState['phase'];
  reason: string | null;
}

/** The processor's term ended: the job must never settle (the next leader picks it up). */
const DEPOSED = Symbol('deposed');
type Run = Promise<BlockEnd | typeof DEPOSED>;

const never = new Promise<never>(() => undefined);

export class BlockLifecycle {
  /** the live processor of each block key in this process */
  private readonly live = new Map<string, Run>();

  constructor(
    private readonly ctx: SchedulerContext,
    private readonly grants: GrantLoop,
  ) {}

  async process(job: Job<BlockJobData>, term: Term): Promise<unknown> {
    const key = blockKey(job.data.experiment, job.data.block);
    for (let prior = this.live.get(key); prior; prior = this.live.get(key)) {
      this.ctx.log.warn({ key, job: job.id }, 'block job delivered again while its processor runs (its lock lapsed): joining that processor');
      const r = await prior;
      if (r !== DEPOSED) return r;
      if (term.aborted) return never;
    }
    const run = this.run(job.data, term);
    this.live.set(key, run);
    try {
      const r = await run;
      return r === DEPOSED ? never : r;
    } finally {
      if (this.live.get(key) === run) this.live.delete(key);
    }
  }

  private async run({ experiment, block }: BlockJobData, term: Term): Run {
    const { store, log: baseLog } = this.ctx;
    const key = blockKey(experiment, block);
    const log = baseLog.child({ experiment, block });
    const exp = await store.get(experiment);
    if (!exp) throw new Error(`experiment ${experiment} is not registered`);
    let st = await store.block(experiment, block);
    for (;;) {
      if (!st) throw new Error(`experiment ${experiment} has no state for block ${block}`);
      if (term.aborted) return DEPOSED;
      if (TERMINAL_BLOCK_PHASES.has(st.phase)) return { phase: st.phase, reason: st.reason };
      if (st.phase === 'running' && st.gang.length > 0) {
        log.info({ attempt: st.attempt }, 're-attaching to the attempt in flight');
      } else {
        const expectedMs = await this.grants.expectedMs(exp);
        const got = await this.grants.waitForGrant({ exp, block, expectedMs });
        if (term.aborted) return DEPOSED;
        if ('cancelled' in got) {
          const w = await this.endBlock(exp, st, st, 'cancelled', got.cancelled);
          if ('end' in w) return w.end;
          st = w.current;
          continue;
        }
        const attempt = st.attempt + 1;
        const next: BlockState = {
          ...st,
          phase: 'running',
          attempt,
          gang: gangWithJobs(experiment, block, attempt, got.gang),
          why: null,
          expected_ms: expectedMs,
          granted_at: Date.now(),
        };
        const w = await store.beginAttempt(experiment, st.attempt, next);
        if (!w.written) {
          log.warn({ attempt, stored: w.current && { phase: w.current.phase, attempt: w.current.attempt } }, 'block state moved since it was read: grant undone');
          await revokeGang(this.ctx.leases, got.gang, `grant undone: block ${block} attempt ${attempt} was recorded by another processor`);
          st = w.current;
          continue;
        }
        st = next;
        log.info({ attempt, gang: st.gang }, 'granted');
      }
      const running: BlockState = st;
      this.grants.attemptStarted(key, running.gang.flatMap((p) => p.cards), (running.granted_at ?? Date.now()) + (running.expected_ms ?? 0));
      const outcome = await observeAttempt(this.ctx, exp, running, term);
      this.grants.attemptEnded(key);
      if (outcome.kind === 'deposed' || term.aborted) return DEPOSED;
      const record = (o: string, reason?: string) => ({
        ...running,
        attempts: [...running.attempts, { attempt: running.attempt, gang: running.gang, outcome: o, ...(reason === undefined ? {} : { reason }) }],
      });
      let w: { end: BlockEnd } | { current: BlockState | null };
      if (outcome.kind === 'committed') {
        await this.recordStepTimes(exp, block);
        w = await this.endBlock(exp, running, record('committed'), 'done', null);
      } else if (outcome.kind === 'cancelled' || outcome.kind === 'failed') {
        w = await this.endBlock(exp, running, record(outcome.kind, outcome.reason), outcome.kind, outcome.reason);
      } else {
        const d = retryDecision(outcome.end, running.attempt, this.ctx.tuning.maxAttempts);
        const ended = record(d.outcome, outcome.end.reason);
        if (!d.retry) {
          w = await this.endBlock(exp, running, ended, 'failed', d.reason);
        } else {
          log.warn({ attempt: running.attempt, reason: d.reason }, 'attempt lost');
          const waiting: BlockState = { ...ended, phase: 'waiting', gang: [], reason: d.reason };
          const t = await store.transitionBlock(experiment, running, waiting);
          w = { current: t.written ? waiting : t.current };
        }
      }
      if ('end' in w) return w.end;
      st = w.current;
    }
  }

  /**
   * Ends a block (compare-and-set from `from`): every planned rep that no attempt committed is
   * recorded as not run (as cancelled, when the block ends cancelled). When the stored state
   * moved, nothing is written and it comes back.
   */
  private async endBlock(
    exp: ExperimentRecord,
    from: BlockState,
    st: BlockState,
    phase: 'done' | 'failed' | 'cancelled',
    reason: string | null,
  ): Promise<{ end: BlockEnd } | { current: BlockState | null }> {
    const final: BlockState = { ...st, phase, reason, why: null, ended_at: Date.now() };
    const w = await this.ctx.store.transitionBlock(exp.id, from, final);
    if (!w.written) return { current: w.current };
    if (phase !== 'done') {
      const measured = await this.ctx.results.measuredFields(exp.id);
      const notRun = plannedReps(exp, st.block)
        .filter((r) => !measured.has(r.field))
        .map((r) =>
          phase === 'cancelled'
            ? { block: r.block, arm: r.arm, rep: r.rep, kind: 'cancelled' as const, reason: `cancelled: ${reason ?? 'cancelled by orch cancel'}` }
            : { block: r.block, arm: r.arm, rep: r.rep, reason: `not run: ${reason ?? phase}` },
        );
      await this.ctx.results.failReps(exp.id, st.block, st.attempt, notRun);
    }
    this.ctx.log.info({ experiment: exp.id, block: st.block, phase, reason }, 'block ended');
    return { end: { phase, reason } };
  }

  private async recordStepTimes(exp: ExperimentRecord, block: number): Promise<void> {
    const all = await this.ctx.results.results(exp.id);
    const steps = Object.entries(all)
      .filter(([k]) => k.startsWith(`${block}/`))
      .flatMap(([, v]) => (v as { step_ms?: number[] }).step_ms ?? []);
    await recordStepHistory(this.ctx.redis, this.ctx.prefix, workloadKey(exp.spec), steps);
  }
}
