/**
 * Telling a Redis that lost its data (restarted without persistence, flushed, replaced) from one
 * that merely dropped a connection: the first orch process to reach it writes a random marker
 * (`<prefix>:instance`, keys.ts); every scheduler, worker and waiting submit remembers the one it
 * saw and checks it again on each heartbeat. A marker that is gone or different means every
 * card registration, lease, plan and result of before is gone too.
 *
 * Also the warning at start when the Redis keeps nothing across a restart (neither RDB nor AOF).
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { orchKeys } from './keys.ts';

export class RedisInstance {
  private readonly key: string;
  /** the marker this process saw last; null before the first claim */
  seen: string | null = null;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.key = orchKeys(prefix).instance;
  }

  /** Writes the marker if there is none and remembers the one Redis holds. */
  async claim(): Promise<string> {
    await this.redis.set(this.key, randomBytes(12).toString('hex'), 'NX');
    this.seen = (await this.redis.get(this.key)) ?? '';
    return this.seen;
  }

  /**
   * Whether the data was lost since the last claim or check: the marker is gone or another one.
   * A lost one is claimed again (a new marker), so each loss is reported once.
   */
  async lostSinceLastCheck(): Promise<boolean> {
    const before = this.seen;
    const now = await this.redis.get(this.key);
    if (before !== null && now === before) return false;
    await this.claim();
    return before !== null;
  }
}

/**
 * Logs a warning when the Redis saves nothing (no RDB save points and no AOF): a restart then
 * loses every experiment in flight. Silent where CONFIG is not allowed (a managed Redis).
 */
export async function warnIfNotPersistent(redis: Redis, log: Logger, who: string): Promise<boolean> {
  try {
    const save = ((await redis.config('GET', 'save')) as string[])[1] ?? '';
    const aof = ((await redis.config('GET', 'appendonly')) as string[])[1] ?? 'no';
    if (save.trim() === '' && aof !== 'yes') {
      log.warn(
        { save, appendonly: aof },
        `${who}: this Redis keeps nothing across a restart (no RDB save points, appendonly no): a restart loses every experiment in flight; set \`appendonly yes\` in redis.conf`,
      );
      return true;
    }
  } catch {
    // CONFIG renamed or refused: nothing to say
  }
  return false;
}
