/** Which attempt committed a block (`<prefix>:experiment:<id>:commits`, field `<block>`). */
import { z } from 'zod';

export const CommitRecordSchema = z.object({
  attempt: z.int().positive(),
  epoch: z.int().min(0),
  host: z.string(),
  /** epoch ms */
  committed: z.number().optional(),
});
export type CommitRecord = z.infer<typeof CommitRecordSchema>;
