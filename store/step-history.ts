/**
 * What one step of a workload took in past reps: `<prefix>:sched:history` hash workload key →
 * JSON { ms_per_step, n }, a running mean over committed reps, updated when a block ends. Read by
 * the scheduler to estimate how long a block holds its cards (backfill).
 */
import type { Redis } from 'ioredis';
import { orchKeys } from './keys.ts';

export interface StepHistory {
  ms_per_step: number;
  n: number;
}

export async function readStepHistory(redis: Redis, prefix: string, workloadKey: string): Promise<StepHistory | null> {
  const v = await redis.hget(orchKeys(prefix).sched.history, workloadKey);
  return v ? (JSON.parse(v) as StepHistory) : null;
}

/** Folds measured step times into the running mean of `workloadKey`. */
export async function recordStepHistory(redis: Redis, prefix: string, workloadKey: string, stepMs: number[]): Promise<void> {
  if (stepMs.length === 0) return;
  const prior = (await readStepHistory(redis, prefix, workloadKey)) ?? { ms_per_step: 0, n: 0 };
  const n = prior.n + stepMs.length;
  const sum = prior.ms_per_step * prior.n + stepMs.reduce((a, b) => a + b, 0);
  await redis.hset(orchKeys(prefix).sched.history, workloadKey, JSON.stringify({ ms_per_step: sum / n, n }));
}
