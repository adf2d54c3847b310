/**
 * What `orch plan` says of a sequential plan: its budget (every block: the card time of the fixed
 * run), the fewest blocks it may stop after (the first look's), and each look's boundary
 * (orchestrator/stats/sequential.ts).
 */
import type { Plan } from '../../jobs/plan.ts';
import { DEFAULT_ALPHA } from '../stats/defaults.ts';
import { lookSchedule, sequentialBoundaries } from '../stats/sequential.ts';

export function sequentialPlanLines(plan: Plan): string[] {
  if (plan.sequential === undefined) return [];
  const max = plan.blocks.length;
  const at = lookSchedule(max, plan.sequential.looks);
  const bounds = sequentialBoundaries(
    at.map((c) => c / max),
    DEFAULT_ALPHA,
  );
  return [
    `sequential: ${max} block(s) at most, as few as ${at[0]}; looks after ${at.join(', ')} block(s), boundaries z ${bounds.map((b) => b.toFixed(2)).join(', ')} (two-sided alpha ${DEFAULT_ALPHA} over all looks)`,
  ];
}
