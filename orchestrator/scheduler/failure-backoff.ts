/**
 * How the scheduler's loops fail on Redis: a full Redis (OOM under noeviction) or one that does
 * not answer makes every write of a pass or of a block's processor fail, and a loop that retried
 * at once and logged each failure spun (66 304 lines in 7 minutes of `orch serve`). Each failing
 * thing (`key`: the grant pass, a block) waits a capped exponential back-off before its next try;
 * the log says each change of state once per `channel` (the first failure, another cause, the
 * recovery with how many repeats it did not print), never each retry.
 */
import type { Logger } from 'pino';
import { messageOf } from '../../jobs/message-of.ts';
import { backoffDelay } from '../../store/connect.ts';
import { isRedisOom } from '../../store/redis-oom.ts';

export const BACKOFF_MIN_MS = 250;
export const BACKOFF_MAX_MS = 30_000;

/** One line for the log: a full Redis by name, else the error's first line. */
export function failureCause(err: unknown): string {
  if (isRedisOom(err)) return 'Redis refuses writes (OOM: at maxmemory, noeviction)';
  const text = messageOf(err);
  return text.split('\n')[0]!.slice(0, 300);
}

export class FailureBackoff {
  private readonly keys = new Map<string, { failures: number; until: number }>();
  private readonly channels = new Map<string, { cause: string; suppressed: number; failing: Set<string> }>();

  constructor(
    private readonly log: Logger,
    private readonly minMs = BACKOFF_MIN_MS,
    private readonly maxMs = BACKOFF_MAX_MS,
  ) {}

  /**
   * `key` failed: returns how long it waits before its next try. Logged when `channel` was not
   * failing or fails for another cause now; a repeat is counted instead.
   */
  failed(channel: string, key: string, err: unknown, fields: Record<string, unknown> = {}): number {
    const k = this.keys.get(key) ?? { failures: 0, until: 0 };
    k.failures++;
    const delay = backoffDelay(k.failures, this.minMs, this.maxMs);
    k.until = Date.now() + delay;
    this.keys.set(key, k);
    const cause = failureCause(err);
    const c = this.channels.get(channel);
    if (c && c.cause === cause) {
      c.suppressed++;
      c.failing.add(key);
      return delay;
    }
    const before = c ? ` (was: ${c.cause}; ${c.suppressed} repeats not logged)` : '';
    this.channels.set(channel, { cause, suppressed: 0, failing: new Set([key]) });
    this.log.error(
      { err, ...fields, channel, retry_in_ms: delay },
      `${channel} failed: ${cause}${before}; retrying with back-off (up to ${this.maxMs / 1000} s), repeats not logged`,
    );
    return delay;
  }

  /** `key` worked: its back-off is reset; once nothing of `channel` fails any more, one line says so. */
  succeeded(channel: string, key: string): void {
    this.keys.delete(key);
    const c = this.channels.get(channel);
    if (!c?.failing.delete(key) || c.failing.size > 0) return;
    this.channels.delete(channel);
    this.log.info(
      { channel, suppressed: c.suppressed },
      `${channel} recovered (${c.suppressed} repeated failures were not logged)`,
    );
  }

  /** ms until `key` may be tried again; 0 when it may now. */
  waitMs(key: string): number {
    const k = this.keys.get(key);
    return k ? Math.max(0, k.until - Date.now()) : 0;
  }

  /** consecutive failures of `key` */
  failures(key: string): number {
    return this.keys.get(key)?.failures ?? 0;
  }

  clear(): void {
    this.keys.clear();
    this.channels.clear();
  }
}
