/**
 * How long a block is expected to hold its cards, for backfill: arms × reps × (warmup + steps)
 * × what one step took in past reps of the same workload, plus a fixed start-up cost (process
 * start, preflight, the identity gate). With no history, a conservative per-step guess.
 * The history itself is kept by store/step-history.ts.
 */
import { createHash } from 'node:crypto';
import type { Plan } from '../../jobs/plan.ts';
import type { Spec } from '../../jobs/spec.ts';
import type { StepHistory } from '../../store/step-history.ts';

export const DEFAULT_MS_PER_STEP = 5;
export const STARTUP_MS = 3000;

/** Reps of the same workload (runtime, kind, params, backend) take alike; toggles are averaged. */
export function workloadKey(spec: Spec): string {
  return createHash('sha256').update(JSON.stringify(spec.workload)).digest('hex').slice(0, 16);
}

export function expectedBlockMs(plan: Plan, spec: Spec, history: StepHistory | null): number {
  const w = spec.workload;
  const perStep = history && history.n > 0 ? history.ms_per_step : DEFAULT_MS_PER_STEP;
  const stepsPerRep = w.warmup + w.steps;
  return STARTUP_MS + plan.arms.length * plan.reps * stepsPerRep * perStep;
}
