/**
 * Where a command's Redis is: `REDIS_URL` (a shared Redis that `orch serve` and the workers
 * use), checked for `noeviction`, with the key prefix from ORCH_PREFIX (default `orch`).
 * Commands that cannot work without a running cluster (status, watch, cancel, report, serve)
 * say so when REDIS_URL is unset; `orch submit` starts the embedded default instead.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { UserInputError } from '../../jobs/errors.ts';
import { connectRedis, requireNoEviction, waitReady } from '../../store/connect.ts';
import { DEFAULT_PREFIX } from '../../store/keys.ts';
import { redactUrl } from '../../store/redact.ts';

export interface RedisTarget {
  url: string;
  prefix: string;
  redis: Redis;
  close(): Promise<void>;
}

export function redisUrlFromEnv(): string | null {
  const url = process.env.REDIS_URL;
  return url && url.trim() !== '' ? url.trim() : null;
}

export function prefixFromEnv(): string {
  return process.env.ORCH_PREFIX || DEFAULT_PREFIX;
}

export async function connectTarget(url: string, prefix: string, log: Logger, name = 'orch-cli'): Promise<RedisTarget> {
  const redis = connectRedis(url, { log, name, maxBackoffMs: 2000 });
  const ready = waitReady(redis);
  const timeout = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new UserInputError('REDIS_UNREACHABLE', `cannot reach Redis at ${redactUrl(url)} within 10 s`, {
      hint: 'check REDIS_URL, or unset it to run embedded (a private redis-server for this command)',
    })), 10_000).unref(),
  );
  try {
    await Promise.race([ready, timeout]);
    await requireNoEviction(redis, url);
  } catch (err) {
    redis.disconnect();
    throw err;
  }
  return { url, prefix, redis, close: async () => void (await redis.quit().catch(() => redis.disconnect())) };
}

/** For commands that need the cluster's Redis: REDIS_URL or a clear refusal. */
export async function requireTarget(command: string, log: Logger): Promise<RedisTarget> {
  const url = redisUrlFromEnv();
  if (!url) {
    throw new UserInputError('NO_REDIS_URL', `orch ${command} needs REDIS_URL (the Redis that orch serve and the workers use)`, {
      hint: 'export REDIS_URL=redis://host:6379; without it, `orch submit SPEC` runs embedded and prints the report itself',
    });
  }
  return connectTarget(url, prefixFromEnv(), log);
}
