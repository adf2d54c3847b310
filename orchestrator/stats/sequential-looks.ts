/**
 * The looks of a sequential experiment, replayed from what is at rest: the blocks in the order
 * they ended, a look each time the count of ended blocks reaches the schedule
 * (sequential.ts lookSchedule), on the primary comparison of exactly those blocks' reps. The
 * scheduler decides with this (orchestrator/scheduler/sequential-stop.ts) as each block ends, and
 * the analysis replays it for the report, so both read one rule and the same data. The first look
 * that decides is the verdict; blocks that ended after it (they were running when it decided) are
 * reported, not used for the decision.
 */
import { type CompareOptions, compareArms } from './compare.ts';
import { valueIndex } from './pairing.ts';
import { decideLook, lookSchedule } from './sequential.ts';
import { tBoundaries } from './t-boundaries.ts';
import type { BlockEnd, Comparison, MetricSpec, PlanLike, RepValue, SequentialOutcome } from './types.ts';

export type { BlockEnd, SequentialOutcome } from './types.ts';

export interface SequentialInput {
  plan: PlanLike & { sequential?: { looks: number } | undefined };
  values: readonly RepValue[];
  /** the blocks that ended with their reps committed, with when */
  ended: readonly BlockEnd[];
  arm: string;
  reference: string;
  metric: MetricSpec;
  alpha: number;
  min_effect: number;
}

/**
 * The primary comparison over `blocks` alone, as a look sees it: the plan cut to those blocks and
 * the values in them. The looks decide on it here; the analysis shows the deciding look's
 * numbers from it (analyze.ts sequentialVerdict).
 */
export function compareAtBlocks(
  plan: PlanLike,
  values: readonly RepValue[],
  blocks: readonly number[],
  arm: string,
  reference: string,
  o: CompareOptions,
): Comparison {
  const saw = new Set(blocks);
  return compareArms(
    { ...plan, blocks: plan.blocks.filter((b) => saw.has(b.index)) },
    valueIndex(values.filter((v) => saw.has(v.block))),
    arm,
    reference,
    o,
  );
}

export function sequentialLooks(x: SequentialInput): SequentialOutcome {
  const maxBlocks = x.plan.blocks.length;
  const schedule = lookSchedule(maxBlocks, x.plan.sequential?.looks ?? 1);
  const order = [...x.ended].sort((a, b) => a.ended_at - b.ended_at || a.block - b.block).map((e) => e.block);
  const counts = schedule.filter((c) => c <= order.length);
  const compared = counts.map((c) =>
    compareAtBlocks(x.plan, x.values, order.slice(0, c), x.arm, x.reference, {
      metric: x.metric,
      alpha: x.alpha,
      min_effect: x.min_effect,
    }),
  );
  // look k's critical value depends on the looks up to k only, so the scheduler's and the report's agree
  const critical = tBoundaries(
    counts.map((c, j) => ({ pairs: compared[j]!.pairs, fraction: c / maxBlocks })),
    x.alpha,
  );
  const looks: SequentialOutcome['looks'] = [];
  for (const [j, c] of counts.entries()) {
    const cmp = compared[j]!;
    const look = decideLook({
      pairs: cmp.pairs,
      maxPairs: cmp.pairs * (maxBlocks / c),
      mean: cmp.log_ratio.mean,
      se: cmp.log_ratio.se,
      critical: critical[j]!,
      last: c === maxBlocks,
      better: x.metric.better,
      min_effect: x.min_effect,
    });
    looks.push({ ...look, blocks: order.slice(0, c).sort((a, b) => a - b) });
    if (look.decision !== 'continue')
      return { looks, decision: look.decision, decided_at: j + 1, max_blocks: maxBlocks };
  }
  return { looks, decision: 'continue', decided_at: null, max_blocks: maxBlocks };
}
