/**
 * The plan as it rests in Redis (`plan` of the experiment hash), parsed before the scheduler
 * acts on it: a record at rest is read through its schema, never trusted by a cast. Typed
 * against `Plan` (jobs/plan.ts), so a field added there and not here fails to compile.
 */
import { z } from 'zod';
import type { Arm, Plan, PlannedBlock } from './plan.ts';
import { BlockSizingSchema } from './sized-plan.ts';
import { DESIGNS } from './spec.ts';

export const ArmSchema = z.strictObject({
  name: z.string().min(1),
  toggles: z.record(z.string(), z.union([z.boolean(), z.string()])),
  params: z.record(z.string(), z.number().meta({ unit: 'param value' })).optional(),
  aa_of: z.string().optional(),
  build: z.string().optional(),
  ref_of: z.string().optional(),
}) satisfies z.ZodType<Arm>;

export const PlannedBlockSchema = z.strictObject({
  index: z.int().min(0).meta({ unit: 'index' }),
  sequence: z.array(z.string().min(1)).min(1),
}) satisfies z.ZodType<PlannedBlock>;

export const PlanSchema = z.strictObject({
  hash: z.string().min(1),
  name: z.string().min(1),
  design: z.enum(DESIGNS),
  toggles: z.array(z.string()),
  control: z.string().min(1),
  arms: z.array(ArmSchema).min(1),
  blocks: z.array(PlannedBlockSchema).min(1),
  reps: z.int().min(1).meta({ unit: 'count' }),
  ranks: z.int().min(1).meta({ unit: 'count' }),
  placement: z.enum(['host', 'spread', 'host_then_spread']),
  order: z.enum(['balanced', 'random']),
  seed: z.number().meta({ unit: 'seed' }).optional(),
  sequential: z.strictObject({ looks: z.int().min(2).meta({ unit: 'count' }) }).optional(),
  reps_per_block: z.union([z.literal('auto'), z.int().min(1).meta({ unit: 'reps per arm' })]).optional(),
  sized: BlockSizingSchema.optional(),
}) satisfies z.ZodType<Plan>;
