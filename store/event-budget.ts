/**
 * An experiment's output budget in Redis (`<prefix>:experiment:<id>:event-budget`): the output
 * lines and bytes its ranks stored in the event stream, and those dropped past a bound of
 * jobs/line-limit.ts. store/lua/append-event.lua writes it; this reads it for the report.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { orchKeys } from './keys.ts';

const count = z.coerce.number().int().min(0).default(0);
export const OutputBudgetSchema = z.object({ lines: count, bytes: count, dropped_lines: count, dropped_bytes: count });
export type OutputBudget = z.infer<typeof OutputBudgetSchema>;

export async function readOutputBudget(redis: Redis, prefix: string, experiment: string): Promise<OutputBudget> {
  return OutputBudgetSchema.parse(await redis.hgetall(orchKeys(prefix).eventBudget(experiment)));
}
