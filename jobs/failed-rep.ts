/**
 * A planned rep that ended without a measurement (`<prefix>:experiment:<id>:failed`, field
 * `<block>/<arm>/<rep>` → FailedRecord): why, and its kind —
 *   failed     its attempt failed (the reason is the attempt's failure)
 *   not_run    a graceful stop (SIGTERM) committed the block before it ran
 *   cancelled  `orch cancel` stopped the block before it ran (or while it ran: a half rep is not measured)
 * Records written before kinds existed have none: `failedKind` reads it from the reason.
 */
import { z } from 'zod';

export const FAILED_KINDS = ['failed', 'not_run', 'cancelled'] as const;
export const FailedKindSchema = z.enum(FAILED_KINDS);
export type FailedKind = z.infer<typeof FailedKindSchema>;

export const FailedRecordSchema = z.object({ reason: z.string(), attempt: z.int().min(0), kind: FailedKindSchema.optional() });
export type FailedRecord = z.infer<typeof FailedRecordSchema>;

export const FailedRepSchema = z.object({ block: z.int().min(0), arm: z.string(), rep: z.int().min(0), reason: z.string(), kind: FailedKindSchema.optional() });
export type FailedRep = z.infer<typeof FailedRepSchema>;

/** The kind of a failure record; one without a kind is `not_run` when its reason says so, else `failed`. */
export function failedKind(f: { reason: string; kind?: FailedKind | undefined }): FailedKind {
  return f.kind ?? (/^not run\b/.test(f.reason) ? 'not_run' : 'failed');
}
