/** One committed identity gate of an arm (`<prefix>:experiment:<id>:gates`, field `<block>/<arm>`). */
import { z } from 'zod';

const count = z.int().min(0);

/** One rank's gate line, as committed. */
export const GateRankDetailSchema = z.object({
  rank: count.meta({ unit: 'index' }),
  card: z.string(),
  pass: z.boolean(),
  replays: z.int().positive().meta({ unit: 'count' }),
  first_bad_replay: z.int().positive().meta({ unit: 'index' }).nullable(),
  eager_hashes: z.array(z.string()),
  graph_hashes: z.array(z.string()),
  nodes: count.meta({ unit: 'count' }).nullable(),
  /** null: a command rank that reports no launch count */
  launches_per_step: count.meta({ unit: 'count' }).nullable(),
  /** command ranks: the first output that differs at first_bad_replay */
  first_bad_output: z.string().nullable().optional(),
});
export type GateRankDetail = z.infer<typeof GateRankDetailSchema>;

export const GateResultSchema = z.object({
  block: count.meta({ unit: 'index' }),
  arm: z.string(),
  name: z.literal('identity'),
  /** every rank passed */
  pass: z.boolean(),
  /** the earliest bad replay over the ranks, null when all passed */
  first_bad_replay: z.int().positive().meta({ unit: 'index' }).nullable(),
  detail: z.array(GateRankDetailSchema).optional(),
});
export type GateResult = z.infer<typeof GateResultSchema>;
