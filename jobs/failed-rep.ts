/**
 * A planned rep that ended without a measurement (`<prefix>:experiment:<id>:failed`, field
 * `<block>/<arm>/<rep>` → FailedRecord): the attempt's failure reason, or "not run" on a graceful stop.
 */
import { z } from 'zod';

export const FailedRecordSchema = z.object({ reason: z.string(), attempt: z.int().min(0) });
export type FailedRecord = z.infer<typeof FailedRecordSchema>;

export const FailedRepSchema = z.object({ block: z.int().min(0), arm: z.string(), rep: z.int().min(0), reason: z.string() });
export type FailedRep = z.infer<typeof FailedRepSchema>;
