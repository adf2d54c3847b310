/**
 * A cancelled experiment in one line per arm: how many of its planned reps were measured and how
 * many were cancelled (`orch cancel` stopped them). A cancel cuts off most of a plan at once, so
 * the cancelled reps are summed here instead of being listed one by one among the input issues.
 */
import { type FailedKind, failedKind } from '../../jobs/failed-rep.ts';
import { type RepRef, repKey } from '../../jobs/rep-ref.ts';
import type { AnalysisInput, CancelledArm } from './types.ts';

/** Per arm of the plan, in plan order; empty when no rep was cancelled. */
export function cancelledByArm(
  planned: readonly RepRef[],
  input: Pick<AnalysisInput, 'reps' | 'failed'>,
): CancelledArm[] {
  const measured = new Set(input.reps.map((r) => repKey(r)));
  const cancelled = new Set(input.failed.filter((f) => failedKind(f) === 'cancelled').map((f) => repKey(f)));
  const byArm = new Map<string, CancelledArm>();
  for (const p of planned) {
    const a = byArm.get(p.arm) ?? { arm: p.arm, planned: 0, measured: 0, cancelled: 0 };
    byArm.set(p.arm, a);
    a.planned++;
    const key = repKey(p);
    if (measured.has(key)) a.measured++;
    else if (cancelled.has(key)) a.cancelled++;
  }
  const arms = [...byArm.values()];
  return arms.some((a) => a.cancelled > 0) ? arms : [];
}

/** Whether a missing rep was cancelled (summed per arm, not an input issue of its own). */
export function isCancelled(f: { reason: string; kind?: FailedKind | undefined } | undefined): boolean {
  return f !== undefined && failedKind(f) === 'cancelled';
}
