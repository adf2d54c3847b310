/**
 * Settling an experiment: the processor of its parent job on `exp`, which BullMQ runs once every
 * block job ended (ignoreDependencyOnFailure: a failed block job ends it too). Every block ends
 * in an end phase and every planned rep ends measured or recorded as not measured; then the
 * experiment's state is final and it leaves the scheduler's queue.
 */
import type { Job } from 'bullmq';
import { TERMINAL_BLOCK_PHASES } from '../../store/experiment-store.ts';
import { plannedReps } from './build-block-job.ts';
import type { BlockJobData, SchedulerContext, Term } from './scheduler-context.ts';

const never = new Promise<never>(() => undefined);

export async function settleExperiment(ctx: SchedulerContext, job: Job<Pick<BlockJobData, 'experiment'>>, term: Term): Promise<unknown> {
  const { store, results, log } = ctx;
  const { experiment } = job.data;
  const exp = await store.get(experiment);
  if (!exp) throw new Error(`experiment ${experiment} is not registered`);
  if (term.aborted) return never;
  // A block whose job failed outside the processor (a bug, a lost Redis, stalled too often)
  // never reached an end phase: it failed, whatever its record says.
  for (const b of await store.blocks(experiment)) {
    if (TERMINAL_BLOCK_PHASES.has(b.phase)) continue;
    const reason = `the block job ended without an outcome (${b.why ?? b.reason ?? 'see the scheduler log'})`;
    const w = await store.transitionBlock(experiment, b, { ...b, phase: 'failed', reason, ended_at: Date.now() });
    if (!w.written) log.warn({ experiment, block: b.block, stored: w.current?.phase }, 'block state moved while settling');
  }
  const blocks = await store.blocks(experiment);
  for (const b of exp.plan.blocks) {
    const st = blocks.find((s) => s.block === b.index);
    if (!st) continue;
    const reason = `not measured: block ${b.index} ended ${st.phase} without this rep`;
    const reps = plannedReps(exp, b.index).map((r) => ({ field: r.field, reason }));
    await results.accountReps(experiment, b.index, st.attempt, reps);
  }
  const state = await store.state(experiment);
  const bad = blocks.filter((b) => b.phase === 'failed');
  if (state === 'cancelling' || state === 'cancelled' || blocks.some((b) => b.phase === 'cancelled')) {
    await store.finish(experiment, 'cancelled', exp.reason ?? 'cancelled');
  } else if (bad.length > 0) {
    await store.finish(experiment, 'failed', bad.map((b) => `block ${b.block}: ${b.reason}`).join('; '));
  } else {
    await store.finish(experiment, 'done', null);
  }
  await store.deactivate(experiment);
  log.info({ experiment, state: await store.state(experiment) }, 'experiment ended');
  return { blocks: blocks.map((b) => b.phase) };
}
