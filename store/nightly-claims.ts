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

  /** The attempt holding the night, or null. */
  async holder(suite: string, scheduledAt: number): Promise<string | null> {
    return this.redis.get(this.keys.nightlyClaim(suite, scheduledAt));
  }
}
