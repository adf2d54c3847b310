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
export function retryDecision(
  end: UnsuccessfulEnd,
  attempt: number,
  maxAttempts: number,
  earlier: readonly { attempt: number; reason?: string | undefined }[] = [],
): RetryDecision {
  if (end.state === 'failed' && end.unrecoverable && !diedHolding(end.reason))
    return { retry: false, outcome: 'failed', reason: end.reason };
  const same = end.state === 'failed' ? sameRankExit(end.reason, earlier) : null;
  if (same !== null)
    return {
      retry: false,
      outcome: 'failed',
      reason: `${end.reason}; the same exit and output as attempt ${same}: a failure that repeats is not retried`,
    };
  if (attempt >= maxAttempts)
    return { retry: false, outcome: 'lost', reason: `${end.reason}; gave up after ${attempt} attempts` };
  return { retry: true, outcome: 'lost', reason: end.reason };
}

/**
 * BullMQ fails a host job whose worker died holding it (kill -9, then a worker of the same host
 * came back before the host looked dead) as unrecoverable once its lock lapsed (maxStalledCount
 * 0): the host was lost, not the payload bad, so it is retried like a lost host.
 */
export const STALLED_REASON = 'job stalled more than allowable limit';

/**
 * The earlier attempt whose rank ended the same way as this one — the same exit code or signal,
 * the same last output — ids aside (pids, cards, attempts, epochs, request ids, seconds); or null.
 * Only rank exits count: a lost lease or host says nothing about the next attempt.
 */
export function sameRankExit(
  reason: string,
  earlier: readonly { attempt: number; reason?: string | undefined }[],
): number | null {
  if (!RANK_EXIT.test(reason)) return null;
  const key = exitKey(reason);
  return (
    earlier.find((a) => a.reason !== undefined && RANK_EXIT.test(a.reason) && exitKey(a.reason) === key)?.attempt ??
    null
  );
}

const RANK_EXIT = /\brank \d+ on card \S+ \(pid [\d?]+\) (exited with code|was killed by)/;

function exitKey(reason: string): string {
  return reason
    .replace(/\bpid \d+/g, 'pid N')
    .replace(/\bcard \S+/g, 'card C')
    .replace(/\b(attempt|epoch|block) \d+/g, '$1 N')
    .replace(/\bb\d+-a\d+-/g, 'bN-aN-')
    .replace(/\d+(\.\d+)? s\b/g, 'T s');
}

function diedHolding(reason: string): boolean {
  return reason.startsWith(STALLED_REASON);
}
