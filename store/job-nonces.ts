/**
 * The once-only use of a signed job (jobs/grant.ts): its nonce is consumed in Redis by
 * consume-nonce.lua before anything of the job runs, so a copy of a signed job re-added after the
 * original was taken (its hash deleted and added again, a second worker reading it) is refused
 * before any process starts. The nonce key outlives the grant: a copy taken after the key is
 * gone is refused by the grant's own expiry.
 */
import type { Redis } from 'ioredis';
import { type OrchKeys, orchKeys } from './keys.ts';
import type { RefusedQueue } from './refused-jobs.ts';
import { runScript } from './scripts.ts';

/** How long a nonce key outlives its grant's expiry (clocks of scheduler and worker may differ). */
const NONCE_MARGIN_MS = 3600 * 1000;

export class JobNonces {
  private readonly keys: OrchKeys;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.keys = orchKeys(prefix);
  }

  /** True when this is the nonce's first use; false (counted as a replay of `queue`) otherwise. */
  async consume(
    nonce: string,
    expires: number,
    jobId: string,
    queue: RefusedQueue,
    now = Date.now(),
  ): Promise<boolean> {
    const ttl = Math.max(1, expires - now) + NONCE_MARGIN_MS;
    const r = await runScript(
      this.redis,
      'consume-nonce',
      [this.keys.grantNonce(nonce), this.keys.refusedJobs],
      [ttl, jobId, `${queue}/GRANT_REPLAYED`],
    );
    return r === 1;
  }
}
