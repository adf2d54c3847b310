/**
 * The count of jobs refused before anything ran — unsigned, forged, altered, replayed — by the
 * workers (`host-<name>`, `build-<name>`) and `orch serve` (`nightly`): one hash, a field per
 * queue kind and refusal code, shown by `orch status`. A refused job's content is never
 * recorded; the count and the worker's log line (job id and code) are what remains of it.
 */
import type { Redis } from 'ioredis';
import { orchKeys } from './keys.ts';

export type RefusedQueue = 'host' | 'build' | 'nightly';

export class RefusedJobs {
  private readonly key: string;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.key = orchKeys(prefix).refusedJobs;
  }

  async count(queue: RefusedQueue, code: string): Promise<void> {
    await this.redis.hincrby(this.key, `${queue}/${code}`, 1);
  }

  /** "<queue kind>/<code>" → how many were refused, sorted by field. */
  async counts(): Promise<Record<string, number>> {
    const all = await this.redis.hgetall(this.key);
    return Object.fromEntries(
      Object.entries(all)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, Number(v)]),
    );
  }
}
