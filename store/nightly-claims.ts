/**
 * Who submits a suite's night: the first attempt to SET NX `<prefix>:nightly:claim:<suite>:<ms>`
 * (keys.ts). Two nightly processors racing for one night (a stalled job handed to a second
 * `orch serve` while the first still runs) both reach Redis before either has written the
 * history's row, so the row alone cannot keep the second from submitting; this key can. It
 * expires long after any night ends, so a scheduled time is never claimed twice.
 */
import type { Redis } from 'ioredis';
import { orchKeys } from './keys.ts';

/** A week: far longer than a night runs, short enough that claims of old nights go away. */
export const NIGHTLY_CLAIM_TTL_MS = 7 * 24 * 3600 * 1000;
const MAX_FAULT_CHARS = 4000;

export class NightlyClaims {
  private readonly keys;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.keys = orchKeys(prefix);
  }

  /** True when `attempt` now holds the night; false when another attempt took it first. */
  async claim(suite: string, scheduledAt: number, attempt: string, ttlMs = NIGHTLY_CLAIM_TTL_MS): Promise<boolean> {
    return (await this.redis.set(this.keys.nightlyClaim(suite, scheduledAt), attempt, 'PX', ttlMs, 'NX')) === 'OK';
  }

  /**
   * Why the night could not be recorded (its history database failed every retry), kept beside
   * the claim so whoever ends the stale run later (the next night, a retry) records the reason,
   * not a guess. Bounded: one string per night, cut to `MAX_FAULT_CHARS`, gone with the claim.
   */
  async recordFault(suite: string, scheduledAt: number, reason: string, ttlMs = NIGHTLY_CLAIM_TTL_MS): Promise<void> {
    await this.redis.set(this.keys.nightlyFault(suite, scheduledAt), reason.slice(0, MAX_FAULT_CHARS), 'PX', ttlMs);
  }

  async fault(suite: string, scheduledAt: number): Promise<string | null> {
    return this.redis.get(this.keys.nightlyFault(suite, scheduledAt));
  }

  /** The attempt holding the night, or null. */
  async holder(suite: string, scheduledAt: number): Promise<string | null> {
    return this.redis.get(this.keys.nightlyClaim(suite, scheduledAt));
  }
}
