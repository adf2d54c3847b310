/**
 * Ending an experiment's waiting blocks: before any got cards (a build that failed, a submission
 * the scheduler refused), every waiting block ends failed with the reason and its planned reps
 * are recorded not run with it; a sequential experiment that decided (sequential-stop.ts) ends
 * them stopped, its reps recorded as not needed; auto-sized blocks (auto-block-sizing.ts) end the
 * blocks `only` names stopped, whose reps the larger blocks before them hold. A compare-and-set per block: one granted
 * meanwhile runs to its end.
 */

import { plannedReps } from '../../jobs/rep-ref.ts';
import type { ExperimentRecord } from '../../store/experiment-store.ts';
import type { SchedulerContext } from './scheduler-context.ts';

export async function failWaitingBlocks(
  ctx: Pick<SchedulerContext, 'store' | 'results'>,
  exp: ExperimentRecord,
  reason: string,
  phase: 'failed' | 'stopped' = 'failed',
  only?: ReadonlySet<number>,
): Promise<void> {
  const { store, results } = ctx;
  for (const st of await store.blocks(exp.id)) {
    if (st.phase !== 'waiting' || (only !== undefined && !only.has(st.block))) continue;
    const w = await store.transitionBlock(exp.id, st, { ...st, phase, reason, why: null, ended_at: Date.now() });
    if (!w.written) continue;
    // each rep names the reason's first line; the whole of it is in the block's and the experiment's reason, once
    const line = reason.split('\n')[0]!;
    const notRun = plannedReps(exp.plan, st.block).map((r) =>
      phase === 'stopped'
        ? { ...r, kind: 'stopped' as const, reason: `stopped: ${line}` }
        : { ...r, reason: `not run: ${line}` },
    );
    await results.failReps(exp.id, st.block, st.attempt, notRun);
  }
}
