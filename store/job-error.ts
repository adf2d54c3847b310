/**
 * The error a BullMQ processor throws: the registry (jobs/error-codes.ts) decides whether the
 * attempt may be retried; one that may not becomes BullMQ's UnrecoverableError, so no attempt is
 * spent on a payload that fails the same way again, and the scheduler (which reads the marker
 * from the failed job, orchestrator/dispatch/block-dispatcher.ts) fails the block at once.
 */
import { UnrecoverableError } from 'bullmq';
import { retryable } from '../jobs/error-codes.ts';

/** `err` itself when retryable, else an UnrecoverableError with `message` (default: err's). */
export function toJobError(err: unknown, message?: string): Error {
  const e = err instanceof Error ? err : new Error(String(err));
  if (retryable(e)) return e;
  if (e instanceof UnrecoverableError && message === undefined) return e;
  return new UnrecoverableError(message ?? e.message);
}
