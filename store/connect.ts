/**
 * The one ioredis connection factory of orch.
 *
 * - `maxRetriesPerRequest: null`: BullMQ's blocking connections require it, and a command issued
 *   during an outage waits for the reconnect instead of failing the caller.
 * - Reconnects forever with capped exponential backoff (100 ms → 5 s by default), each attempt
 *   logged with the cause: an unreachable Redis is retried and logged, never a crash loop.
 * - `requireNoEviction` refuses a Redis whose maxmemory-policy could evict leases, streams or
 *   queue state (an evicted lease would let two gangs share a card), saying how to fix it.
 */
import { connect as netConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { UserInputError } from '../jobs/errors.ts';
import { redactUrl, urlHasPassword } from '../jobs/redact.ts';

export interface ConnectOptions {
  log: Logger;
  /** shown in CLIENT LIST and in the log lines */
  name?: string;
  /** first retry delay; doubles per attempt up to maxBackoffMs */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** connect only when first used (ioredis lazyConnect) */
  lazy?: boolean;
  /**
   * Send the commands issued in one tick of the event loop as one pipeline (ioredis
   * enableAutoPipelining): for a connection many concurrent callers share, one socket write per
   * tick instead of one per command. Never on a connection that blocks (BullMQ's workers).
   */
  autoPipelining?: boolean;
}

/** Delay before reconnect attempt `times` (1-based): min · 2^(times-1), capped at max. */
export function backoffDelay(times: number, minMs = 100, maxMs = 5000): number {
  return Math.min(maxMs, minMs * 2 ** Math.max(0, times - 1));
}

export function connectRedis(url: string, opts: ConnectOptions): Redis {
  const log = opts.log.child({ redis: redactUrl(url), conn: opts.name ?? 'orch' });
  let lastError = '';
  const redis = new Redis(url, {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    lazyConnect: opts.lazy ?? false,
    connectionName: opts.name,
    enableAutoPipelining: opts.autoPipelining ?? false,
    retryStrategy: (times) => {
      const delay = backoffDelay(times, opts.minBackoffMs, opts.maxBackoffMs);
      log.warn(
        { attempt: times, retry_in_ms: delay, cause: lastError },
        AUTH_REFUSED.test(lastError) ? 'redis refused the password; retrying' : 'redis unreachable; retrying',
      );
      return delay;
    },
  });
  redis.on('error', (err: Error) => {
    lastError = err.message;
  });
  redis.on('ready', () => {
    if (lastError !== '') log.info('redis connection (re)established');
    lastError = '';
  });
  return redis;
}

/** Resolves once the connection is ready; ioredis keeps retrying meanwhile (see connectRedis). */
export async function waitReady(redis: Redis): Promise<void> {
  if (redis.status === 'ready') return;
  if (redis.status === 'wait') await redis.connect();
  await new Promise<void>((resolve, reject) => {
    const onReady = () => {
      redis.off('end', onEnd);
      resolve();
    };
    const onEnd = () => {
      redis.off('ready', onReady);
      reject(new Error('redis connection closed before it was ready'));
    };
    redis.once('ready', onReady);
    redis.once('end', onEnd);
  });
}

/** A refusal no reconnect fixes: the URL's password is wrong, or Redis needs one it lacks. */
const AUTH_REFUSED = /^(WRONGPASS|NOAUTH)\b/;

export interface ReadyWithinOptions {
  /** default 10 s; Infinity: wait as long as it takes (a daemon started before its Redis) */
  timeoutMs?: number;
  /** what to do when it is unreachable (the fix of REDIS_URL differs per command) */
  hint?: string;
}

/**
 * Resolves once `redis` is ready. Rejects at once with REDIS_AUTH when Redis refuses the
 * password (WRONGPASS) or asks for one (NOAUTH): retrying cannot fix that, and "unreachable"
 * would send the user to the network. Rejects with REDIS_UNREACHABLE, naming the last
 * connection error, once `timeoutMs` has passed or the connection has ended for good. The
 * connection is left to the caller to close either way.
 */
export async function readyWithin(redis: Redis, url: string, opts: ReadyWithinOptions = {}): Promise<void> {
  if (redis.status === 'ready') return;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const where = redactUrl(url);
  await new Promise<void>((resolve, reject) => {
    let last = '';
    const unreachable = (why: string) =>
      new UserInputError(
        'REDIS_UNREACHABLE',
        `cannot reach Redis at ${where}${Number.isFinite(timeoutMs) ? ` within ${timeoutMs / 1000} s` : ''}${why ? `: ${why}` : ''}`,
        {
          hint: opts.hint ?? 'check REDIS_URL (redis://:PASSWORD@host:port) and that redis-server is running there',
        },
      );
    const done = (err?: Error) => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      redis.off('error', onError);
      redis.off('end', onEnd);
      if (err) reject(err);
      else resolve();
    };
    const onReady = () => done();
    const onError = (err: Error) => {
      last = err.message;
      if (AUTH_REFUSED.test(err.message)) {
        const what = urlHasPassword(url) ? 'refused the password' : 'needs a password and the URL gives none';
        done(
          new UserInputError('REDIS_AUTH', `Redis at ${where} ${what}: ${err.message.split('\n')[0]}`, {
            hint: "check REDIS_URL's password (redis://:PASSWORD@host:port, or redis://USER:PASSWORD@host:port for an ACL user); it must match requirepass in the server's redis.conf",
            cause: err,
          }),
        );
      }
    };
    const onEnd = () => done(unreachable(last || 'the connection was closed'));
    const timer = Number.isFinite(timeoutMs) ? setTimeout(() => done(unreachable(last)), timeoutMs) : undefined;
    timer?.unref();
    redis.on('ready', onReady);
    redis.on('error', onError);
    redis.once('end', onEnd);
    if (redis.status === 'wait') redis.connect().catch(() => undefined);
  });
}

/**
 * Refuses a Redis whose `maxmemory-policy` is not `noeviction`: an evicted lease key is a
 * second process on a card, an evicted result is a silently dropped rep.
 */
export async function requireNoEviction(redis: Redis, url: string): Promise<void> {
  const reply = (await redis.config('GET', 'maxmemory-policy')) as string[];
  const policy = reply[1] ?? '(unknown)';
  if (policy !== 'noeviction') {
    throw new UserInputError(
      'REDIS_EVICTION_POLICY',
      `Redis at ${redactUrl(url)} has maxmemory-policy "${policy}"; orch needs "noeviction" (an evicted lease or result key would put two processes on one card or drop a measurement)`,
      {
        hint: `run \`redis-cli -u ${redactUrl(url)} CONFIG SET maxmemory-policy noeviction\` and put \`maxmemory-policy noeviction\` in redis.conf so it survives a restart`,
      },
    );
  }
}

export { redactUrl } from '../jobs/redact.ts';

/**
 * Whether the Redis behind `redis` answers a client that presents no credentials: a second,
 * credential-less connection to the same address sends PING; NOAUTH means a password or ACL
 * protects it. Asked this way rather than by CONFIG GET requirepass because ACL users and a
 * renamed CONFIG command both hide the answer there; and over a bare socket because ioredis
 * closes a connection whose handshake is refused before any reply reaches the caller.
 */
export async function redisAnswersWithoutAuth(redis: Redis, timeoutMs = 5000): Promise<boolean> {
  const o = redis.options;
  const reply = await new Promise<string>((resolve, reject) => {
    const onConnect = () => socket.write('*1\r\n$4\r\nPING\r\n');
    const socket = o.path
      ? netConnect({ path: o.path }, onConnect)
      : o.tls
        ? tlsConnect({ ...o.tls, host: o.host, port: o.port }, onConnect)
        : netConnect({ host: o.host ?? '127.0.0.1', port: o.port ?? 6379 }, onConnect);
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer to PING from ${o.host}:${o.port} within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('data', (d: Buffer) => {
      data += d.toString('utf8');
      if (data.includes('\r\n')) {
        clearTimeout(timer);
        socket.destroy();
        resolve(data.slice(0, data.indexOf('\r\n')));
      }
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
  if (reply.startsWith('+PONG')) return true;
  if (/^-(NOAUTH|WRONGPASS|NOPERM)/.test(reply)) return false;
  throw new Error(`unexpected answer to PING without credentials: ${reply.slice(0, 100)}`);
}

/**
 * Refuses (or, with `allowInsecure`, warns about) a Redis anyone can write to without a
 * password: a worker runs what its Redis tells it, so write access to an open Redis is running
 * commands as the worker's user.
 */
export async function requireRedisAuth(
  redis: Redis,
  url: string,
  opts: { allowInsecure: boolean; log: Logger; who: string },
): Promise<void> {
  if (!(await redisAnswersWithoutAuth(redis))) return;
  const what = `Redis at ${redactUrl(url)} answers without a password: anyone who can reach it can queue work that ${opts.who} runs as user ${process.env.USER ?? process.getuid?.() ?? '?'}`;
  if (opts.allowInsecure) {
    opts.log.warn({ redis: redactUrl(url) }, `${what} (--insecure-redis given)`);
    return;
  }
  throw new UserInputError('REDIS_NO_PASSWORD', `${what}; refusing to start`, {
    hint: 'set `requirepass <long random secret>` (or ACL users) in redis.conf and put the password in the URL (redis://:PASSWORD@host:port) given through REDIS_URL or --redis-url-file; or pass --insecure-redis on a network only you can reach',
  });
}
