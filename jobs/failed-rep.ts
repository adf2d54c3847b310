/**
 * A planned rep that ended without a measurement (`<prefix>:experiment:<id>:failed`, field
 * `repKey` of jobs/rep-ref.ts → FailedRecord): which rep it is, why, and its kind —
 *   failed     its attempt failed (the reason is the attempt's failure)
 *   not_run    a graceful stop (SIGTERM) committed the block before it ran
 *   cancelled  `orch cancel` stopped the block before it ran (or while it ran: a half rep is not measured)
 *   stopped    a sequential experiment decided before its block ran (orchestrator/stats/sequential.ts)
 * Records written before kinds existed have none: `failedKind` reads it from the reason.
 */
import { z } from 'zod';
import { OtherBlockersSchema } from './orch-rank-protocol.ts';
import { RepRefSchema } from './rep-ref.ts';

export const FAILED_KINDS = ['failed', 'not_run', 'cancelled', 'stopped'] as const;
export const FailedKindSchema = z.enum(FAILED_KINDS);
export type FailedKind = z.infer<typeof FailedKindSchema>;

/**
 * A rep that was not measured, and why. It carries its whole identity (RepRef) like a committed
 * rep does, so a reader never parses one back out of the hash field.
 */
export const FailedRepSchema = RepRefSchema.extend({
  reason: z.string(),
  kind: FailedKindSchema.optional(),
  /** a capture blocker's record (jobs/capture-blocker.ts): the arm's other blockers, beside the first its reason names */
  other_blockers: OtherBlockersSchema.optional(),
});
export type FailedRep = z.infer<typeof FailedRepSchema>;

/** A failed rep as stored: the attempt whose failure (or stop) it records, too. */
export const FailedRecordSchema = FailedRepSchema.extend({ attempt: z.int().min(0) });
export type FailedRecord = z.infer<typeof FailedRecordSchema>;

/**
 * A planned rep its block took along when it ended cancelled (`orch cancel`, or a build that failed
 * while it waited): the block's reason. One wording for the block's end and the settling that
 * accounts what that end left, so `cancelled_reasons` counts them as one.
 */
export function cancelledRep(blockReason: string | null): { kind: 'cancelled'; reason: string } {
  return { kind: 'cancelled', reason: `cancelled: ${blockReason ?? 'cancelled by orch cancel'}` };
}

/** The kind of a failure record; one without a kind is `not_run` when its reason says so, else `failed`. */
export function failedKind(f: { reason: string; kind?: FailedKind | undefined }): FailedKind {
  return f.kind ?? (/^not run\b/.test(f.reason) ? 'not_run' : 'failed');
}
