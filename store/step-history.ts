/**
 * What one step of a workload took in past reps: `<prefix>:sched:history` hash workload key →
 * JSON { ms_per_step, n }, a running mean over committed reps, updated when a sampled block ends. Read by
 * the scheduler to estimate how long a block holds its cards (backfill).
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { parseStored } from '../jobs/parse-stored.ts';
import { orchKeys } from './keys.ts';
import { runScript } from './scripts.ts';

export const StepHistorySchema = z.object({
  ms_per_step: z.number().nonnegative(),
  n: z.int().min(1),
});
export type StepHistory = z.infer<typeof StepHistorySchema>;

export async function readStepHistory(redis: Redis, prefix: string, workloadKey: string): Promise<StepHistory | null> {
  const key = orchKeys(prefix).sched.history;
  const v = await redis.hget(key, workloadKey);
  return v ? parseStored(StepHistorySchema, v, `${key} field ${workloadKey}`) : null;
}

/** Folds measured step times into the running mean of `workloadKey` (atomic: store/lua/step-history-fold.lua). */
export async function recordStepHistory(
  redis: Redis,
  prefix: string,
  workloadKey: string,
  stepMs: number[],
): Promise<void> {
  if (stepMs.length === 0) return;
  const sum = stepMs.reduce((a, b) => a + b, 0);
  await runScript(redis, 'step-history-fold', [orchKeys(prefix).sched.history], [workloadKey, sum, stepMs.length]);
}

/**
 * Which ended blocks feed the history: at most one per workload every `intervalMs`. The history
 * is a running mean for backfill's estimate; folding every block's reps in read them all back
 * and parsed them (a twentieth of the scheduler's CPU at 300 grants/s), while a sample of a few
 * blocks a second moves the mean as well.
 */
export class StepHistorySampler {
  private readonly last = new Map<string, number>();

  constructor(private readonly intervalMs = 500) {}

  /** True when a block of `workloadKey` ending now should be folded in (and marks it so). */
  take(workloadKey: string, now = Date.now()): boolean {
    const at = this.last.get(workloadKey);
    if (at !== undefined && now - at < this.intervalMs) return false;
    this.last.set(workloadKey, now);
    return true;
  }
}
