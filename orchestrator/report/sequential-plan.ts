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
  // a look that spends no alpha has no boundary: it cannot stop, so the earliest stop is the first look with one
  const earliest = at[bounds.findIndex(Number.isFinite)] ?? max;
  const none = bounds.some((b) => !Number.isFinite(b)) ? '; none: the look spends no alpha and cannot stop' : '';
  return [
    `sequential: ${max} block(s) at most, as few as ${earliest}; looks after ${at.join(', ')} block(s), boundaries z ${bounds.map((b) => (Number.isFinite(b) ? b.toFixed(2) : 'none')).join(', ')} (two-sided alpha ${DEFAULT_ALPHA} over all looks${none})`,
  ];
}
