/**
 * Whether a block attempt that ended without committing is tried again — the one place that
 * decides, so the error-code registry can drive it.
 */
import type { AttemptEnd } from '../dispatch/block-dispatcher.ts';

export type UnsuccessfulEnd = Exclude<AttemptEnd, { state: 'completed' }>;

export interface RetryDecision {
  retry: boolean;
  /** how the attempt is recorded in the block's attempts */
  outcome: 'lost' | 'failed';
  /** why the block ended, when it is not retried */
  reason: string;
}

/**
 * A host that threw UnrecoverableError would fail the same payload again: the block fails. Any
 * other end (a failure, a lost host) is retried as attempt + 1 on new leases, up to maxAttempts.
 */
export function retryDecision(end: UnsuccessfulEnd, attempt: number, maxAttempts: number): RetryDecision {
  if (end.state === 'failed' && end.unrecoverable && !diedHolding(end.reason)) return { retry: false, outcome: 'failed', reason: end.reason };
  if (attempt >= maxAttempts) return { retry: false, outcome: 'lost', reason: `${end.reason}; gave up after ${attempt} attempts` };
  return { retry: true, outcome: 'lost', reason: end.reason };
}

/**
 * BullMQ fails a host job whose worker died holding it (kill -9, then a worker of the same host
 * came back before the host looked dead) as unrecoverable once its lock lapsed (maxStalledCount
 * 0): the host was lost, not the payload bad, so it is retried like a lost host.
 */
export const STALLED_REASON = 'job stalled more than allowable limit';

function diedHolding(reason: string): boolean {
  return reason.startsWith(STALLED_REASON);
}
