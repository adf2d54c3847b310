/**
 * Every planned rep's fate, for summary.json and `orch report --json`: measured (a committed
 * result), failed (its attempt failed), not run (a graceful stop committed the block before it),
 * cancelled (`orch cancel` stopped it), stopped (a sequential experiment decided without it), or unaccounted (none of those: must not happen once the
 * experiment ended). The counts are for people; `reps` is for scripts.
 */
import { z } from 'zod';
import { type FailedRecord, failedKind } from '../../jobs/failed-rep.ts';
import { allPlannedReps, repKey } from '../../jobs/rep-ref.ts';
import type { ExperimentRecord } from '../../store/experiment-store.ts';

const count = z.int().min(0).meta({ unit: 'count' });

export const RepFateSchema = z.union([
  z.strictObject({ fate: z.literal('measured') }),
  z.strictObject({
    fate: z.enum(['failed', 'not_run', 'cancelled', 'stopped']),
    reason: z.string(),
    attempt: z.int().min(0).meta({ unit: 'count' }),
  }),
]);
export type RepFate = z.infer<typeof RepFateSchema>;

export const AccountingSchema = z.strictObject({
  planned: count,
  measured: count,
  /** failed or not run: planned reps without a result that were not cancelled */
  not_run: count,
  cancelled: count,
  /** not needed: a sequential experiment decided before their blocks ran */
  stopped: count,
  /** planned reps neither measured nor recorded as not run: must be 0 once the experiment ended */
  unaccounted: z.array(z.string()),
  not_run_reasons: z.record(z.string(), count),
  cancelled_reasons: z.record(z.string(), count),
  /** every planned rep ("<block>/<arm>/<rep>") and its fate */
  reps: z.record(z.string(), RepFateSchema),
});
export type Accounting = z.infer<typeof AccountingSchema>;

export function accountReps(
  exp: Pick<ExperimentRecord, 'plan'>,
  reps: Record<string, unknown>,
  failed: Record<string, FailedRecord>,
): Accounting {
  const planned = allPlannedReps(exp.plan);
  const a: Accounting = {
    planned: planned.length,
    measured: 0,
    not_run: 0,
    cancelled: 0,
    stopped: 0,
    unaccounted: [],
    not_run_reasons: {},
    cancelled_reasons: {},
    reps: {},
  };
  for (const r of planned) {
    const field = repKey(r);
    const f = failed[field];
    if (reps[field] !== undefined) {
      a.measured++;
      a.reps[field] = { fate: 'measured' };
    } else if (f) {
      const fate = failedKind(f);
      a.reps[field] = { fate, reason: f.reason, attempt: f.attempt };
      if (fate === 'stopped') {
        a.stopped++;
        continue;
      }
      const reasons = fate === 'cancelled' ? a.cancelled_reasons : a.not_run_reasons;
      reasons[f.reason] = (reasons[f.reason] ?? 0) + 1;
      if (fate === 'cancelled') a.cancelled++;
      else a.not_run++;
    } else a.unaccounted.push(field);
  }
  return a;
}
