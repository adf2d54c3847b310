/**
 * How long a block is expected to hold its cards, for backfill: arms × reps × (warmup + steps)
 * × what one step took in past reps of the same workload, plus a fixed start-up cost (process
 * start, preflight, the identity gate). With no history, a conservative per-step guess.
 *
 * History: `<prefix>:sched:history` hash workload key → JSON { ms_per_step, n }, a running mean
 * over committed reps, updated when a block ends.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Plan } from '../../jobs/plan.ts';
import type { Spec } from '../../jobs/spec.ts';
import { schedulerKeys } from './scheduler-keys.ts';

export const DEFAULT_MS_PER_STEP = 5;
export const STARTUP_MS = 3000;

export interface StepHistory {
  ms_per_step: number;
  n: number;
}

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

export async function readHistory(redis: Redis, prefix: string, spec: Spec): Promise<StepHistory | null> {
  const v = await redis.hget(schedulerKeys(prefix).history, workloadKey(spec));
  return v ? (JSON.parse(v) as StepHistory) : null;
}

/** Folds the measured steps of a block's committed reps into the running mean. */
export async function recordHistory(redis: Redis, prefix: string, spec: Spec, stepMs: number[]): Promise<void> {
  if (stepMs.length === 0) return;
  const key = workloadKey(spec);
  const prior = (await readHistory(redis, prefix, spec)) ?? { ms_per_step: 0, n: 0 };
  const n = prior.n + stepMs.length;
  const sum = prior.ms_per_step * prior.n + stepMs.reduce((a, b) => a + b, 0);
  await redis.hset(schedulerKeys(prefix).history, key, JSON.stringify({ ms_per_step: sum / n, n }));
}
