/** Which attempt committed a block (`<prefix>:experiment:<id>:commits`, field `<block>`). */
import { z } from 'zod';
import { RankOriginSchema } from './rank-origin.ts';

export const CommitRecordSchema = z.object({
  attempt: z.int().positive(),
  epoch: z.int().min(0),
  host: z.string(),
  /** epoch ms */
  committed: z.number().optional(),
  /**
   * The attempt's timeline on the committing worker's clock (epoch ms): its block-start (the lease
   * taken, the attempt begun), every rank's hello in (`ready`), every identity gate done (`gated`).
   * Card time (orchestrator/stats/busy-share.ts) reads the lease from here, `started` to
   * `committed`, not from the event stream. Absent on older records.
   */
  started: z.number().optional(),
  ready: z.number().optional(),
  gated: z.number().optional(),
  /**
   * Where each rank of the gang ran, from its hello (jobs/rank-origin.ts), every host of a spread
   * gang, rank order: the provenance's hosts, cards and devices read it, not the event stream.
   * Absent on older records.
   */
  ranks: z.array(RankOriginSchema).optional(),
});
export type CommitRecord = z.infer<typeof CommitRecordSchema>;
