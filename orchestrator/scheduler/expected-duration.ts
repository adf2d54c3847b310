/**
 * How long a block is expected to hold its cards, for backfill: arms × reps × (warmup + steps)
 * × what one step took in past reps of the same workload, plus a fixed start-up cost (process
 * start, preflight, the identity gate). With no history the estimate is unknown: backfill plans
 * with a per-step guess (`plannedBlockMs`), but nothing shown to a user is made of the guess.
 * The history itself is kept by store/step-history.ts.
 */
import { createHash } from 'node:crypto';
import type { Plan } from '../../jobs/plan.ts';
import type { Spec } from '../../jobs/spec.ts';
import type { StepHistory } from '../../store/step-history.ts';

/** Backfill's guess for a workload never measured; never shown as an estimate. */
export const GUESSED_MS_PER_STEP = 5;
export const STARTUP_MS = 3000;

/** Reps of the same workload (runtime, kind, params, backend) take alike; toggles are averaged. */
export function workloadKey(spec: Spec): string {
  return createHash('sha256').update(JSON.stringify(spec.workload)).digest('hex').slice(0, 16);
}

/** What one rep of `spec` took in past reps (ms), and how many reps that rests on; null with no history. */
export function historyRepMs(spec: Spec, history: StepHistory | null): { ms: number; reps: number } | null {
  if (!history || history.n <= 0) return null;
  const stepsPerRep = spec.workload.warmup + spec.workload.steps;
  return {
    ms: history.ms_per_step * stepsPerRep,
    reps: Math.max(1, Math.round(history.n / Math.max(1, spec.workload.steps))),
  };
}

/** A block's expected time on its cards from the step history, or null when none was measured. */
export function expectedBlockMs(plan: Plan, spec: Spec, history: StepHistory | null): number | null {
  const rep = historyRepMs(spec, history);
  return rep === null ? null : blockMs(plan, rep.ms);
}

/** What backfill plans with: the expected time, else the guess (`known` says which). */
export function plannedBlockMs(plan: Plan, spec: Spec, history: StepHistory | null): { ms: number; known: boolean } {
  const ms = expectedBlockMs(plan, spec, history);
  if (ms !== null) return { ms, known: true };
  return { ms: blockMs(plan, (spec.workload.warmup + spec.workload.steps) * GUESSED_MS_PER_STEP), known: false };
}

function blockMs(plan: Plan, msPerRep: number): number {
  return STARTUP_MS + plan.arms.length * plan.reps * msPerRep;
}
