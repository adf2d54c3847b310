/**
 * The scheduler's side of `stopping: sequential`: each time a block of a sequential experiment
 * ends committed, and the count of ended blocks reaches the look schedule, the experiment's
 * committed records are analysed as the report will analyse them (one input,
 * orchestrator/results/analysis-input.ts; orchestrator/stats/analyze.ts replays the looks), and a decisive look ends every block still
 * waiting as stopped (grant-loop.ts stopWaiting). Blocks running at that moment run to their end;
 * the decision is the look's, on the blocks it saw. A gate that failed decides nothing: the
 * experiment runs on to its budget and ends invalid, as a fixed one would.
 */

import type { ExperimentRecord } from '../../store/experiment-store.ts';
import { analysisInput, endedBlocks } from '../results/analysis-input.ts';
import { analyzeExperiment } from '../stats/analyze.ts';
import { lookSchedule } from '../stats/sequential.ts';
import type { SchedulerContext } from './scheduler-context.ts';

export interface StopDecision {
  /** the reason the stopped blocks and reps carry */
  reason: string;
}

/** The look due now, if any, and whether it decided; null while the experiment goes on. */
export async function sequentialStop(
  ctx: Pick<SchedulerContext, 'store' | 'results'>,
  exp: ExperimentRecord,
): Promise<StopDecision | null> {
  const looks = exp.plan.sequential?.looks;
  if (looks === undefined) return null;
  const blocks = await ctx.store.blocks(exp.id);
  if (!lookSchedule(exp.plan.blocks.length, looks).includes(endedBlocks(blocks).length)) return null;
  if (blocks.every((b) => b.phase !== 'waiting')) return null;
  const [reps, failed, gates] = await Promise.all([
    ctx.results.results(exp.id),
    ctx.results.failed(exp.id),
    ctx.results.gates(exp.id),
  ]);
  const analysis = analyzeExperiment(analysisInput({ exp, blocks, reps, failed, gates }));
  const s = analysis.sequential;
  if (
    analysis.verdict === 'invalid' ||
    s === null ||
    s === undefined ||
    s.decided_at === null ||
    s.decision === 'continue'
  )
    return null;
  const look = s.looks[s.decided_at - 1]!;
  return {
    reason: `the sequential rule decided ${s.decision} at look ${s.decided_at} (${look.blocks.length} of ${s.max_blocks} blocks, ${look.pairs} pairs): this block was not needed`,
  };
}
