/**
 * The plan as `blocks.reps_per_block: auto` made it (pure): the registered plan, signed at submit,
 * with the blocks after the first regrouped by the sizing the scheduler wrote beside it once the
 * first block committed (`block_sizing` of the experiment hash, jobs/block-sizing.ts). The sizing
 * is data, not trusted: it is parsed, and it must hold the registered plan's reps exactly — every
 * size within the spec's bounds, the same reps per arm in all — or the read fails naming where.
 * So a sizing written by hand can regroup reps, never add, drop or reorder an arm's planned count.
 */
import { z } from 'zod';
import type { BlockSizing } from './block-sizing.ts';
import { LIMITS } from './limits.ts';
import { checkStored } from './parse-stored.ts';
import { blockSequences, type Plan } from './plan.ts';

export const BlockSizingSchema = z.strictObject({
  sizes: z.array(z.int().min(1).meta({ unit: 'reps per arm' })),
  wanted: z.int().min(1).meta({ unit: 'reps per arm' }),
  held_by: z.enum(['max_reps', 'remaining', 'cards']).nullable(),
  startup_ms: z.number().min(0).meta({ unit: 'ms' }),
  overlapped_ms: z.number().min(0).meta({ unit: 'ms' }).optional(),
  lease_ms: z.number().min(0).meta({ unit: 'ms' }),
}) satisfies z.ZodType<BlockSizing>;

/** `plan` with its blocks after the first regrouped by `sizing` (read from `where`); the plan itself when it is not auto. */
export function applyBlockSizing(plan: Plan, sizing: BlockSizing, where: string): Plan {
  if (plan.reps_per_block !== 'auto') return plan;
  const later = plan.reps * (plan.blocks.length - 1);
  const sum = (sizes: readonly number[]) => sizes.reduce((n, k) => n + k, 0);
  checkStored(
    BlockSizingSchema.refine((s) => sum(s.sizes) === later, {
      error: `the sizes must hold the ${later} reps per arm the blocks after the first hold`,
    }).refine((s) => s.sizes.every((n) => n >= plan.reps && n <= LIMITS.orch.reps.max), {
      error: `every size must lie within ${plan.reps}..${LIMITS.orch.reps.max} reps per arm`,
    }),
    sizing,
    where,
  );
  const first = plan.blocks[0];
  if (first === undefined) return plan;
  const names = plan.arms.map((a) => a.name);
  const blocks = blockSequences(names, [plan.reps, ...sizing.sizes], plan.order, plan.seed ?? 0);
  return { ...plan, blocks: [first, ...blocks.slice(1)], sized: sizing };
}
