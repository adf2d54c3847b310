/**
 * What every route of the dashboard shares: the Redis connection (commands fail fast while it
 * is down, instead of waiting for the reconnect as orch's other connections do), the prefix, the
 * results directory, the token with its CSRF value, and the logger.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { redactUrl } from '../../jobs/redact.ts';

export interface DashboardContext {
  redis: Redis;
  url: string;
  prefix: string;
  /** the folder holding results/<id>/ */
  resultsRoot: string;
  /** null: no token (--open-loopback: loopback only, and no write action) */
  token: string | null;
  /** the CSRF field's value the pages' forms carry (auth.ts csrfValue); null without a token */
  csrf: string | null;
  log: Logger;
}

/** Thrown when Redis does not answer; every page turns it into the "Redis unreachable" state. */
export class RedisDownError extends Error {
  constructor(url: string, cause: string) {
    super(`Redis at ${redactUrl(url)} is unreachable (${cause})`);
  }
}

export function redisUp(ctx: DashboardContext): boolean {
  return ctx.redis.status === 'ready';
}

/**
 * Runs `read` against Redis, refusing at once while the connection is down and giving up after
 * `timeoutMs` (a read queued on a dropped connection would otherwise wait for the reconnect).
 */
export async function fromRedis<T>(ctx: DashboardContext, read: () => Promise<T>, timeoutMs = 4000): Promise<T> {
  if (!redisUp(ctx)) throw new RedisDownError(ctx.url, `connection ${ctx.redis.status}`);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RedisDownError(ctx.url, `no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([read(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
