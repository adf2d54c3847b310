/**
 * Redis at `maxmemory` under `noeviction` (store/connect.ts requires it) refuses every write with
 * `OOM command not allowed when used memory > 'maxmemory'`. That reply is a condition of the
 * cluster, not a bug of orch: it becomes REDIS_OOM, whose hint names what filled Redis (orch's
 * largest keys by MEMORY USAGE) and what to do.
 */
import type { Redis } from 'ioredis';
import { ERROR_CODES } from '../jobs/error-codes.ts';
import { OrchError, UserInputError } from '../jobs/errors.ts';
import { formatBytes } from '../jobs/limits.ts';
import { messageOf } from '../jobs/message-of.ts';

/** Whether `err` is Redis refusing a write for want of memory. */
export function isRedisOom(err: unknown): boolean {
  return err instanceof Error && /^OOM\b/.test(err.message);
}

/**
 * Redis errors a caller waits out rather than acts on: out of memory, loading, a read-only
 * replica, a busy script, a failed background save that stops writes, a dropped connection.
 */
export function isRedisCondition(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  return (
    /^(OOM|LOADING|READONLY|BUSY|MISCONF|MASTERDOWN|TRYAGAIN|CLUSTERDOWN)\b/.test(err.message) ||
    /Connection is closed|ECONNREFUSED|ECONNRESET|ETIMEDOUT|Stream isn't writeable/.test(err.message)
  );
}

/**
 * REDIS_OOM for a refused write met where no connection is at hand to say what filled Redis (the
 * CLI's last resort); an OrchError already is what it is.
 */
export function asRedisOom(err: unknown): unknown {
  if (!isRedisOom(err) || err instanceof OrchError) return err;
  return new UserInputError('REDIS_OOM', `Redis refused a write: ${messageOf(err).split('\n')[0]}`, {
    cause: err,
    hint: ERROR_CODES.REDIS_OOM.hint,
  });
}

/** How many of orch's keys a diagnosis looks at (SCAN), and how many it names. */
const SCAN_KEYS = 2000;
const NAMED_KEYS = 3;

/** orch's keys under `prefix` by MEMORY USAGE, of at most SCAN_KEYS looked at: the largest, and their sum. */
export async function orchMemory(
  redis: Redis,
  prefix: string,
): Promise<{ largest: { key: string; bytes: number }[]; bytes: number; keys: number }> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0' && keys.length < SCAN_KEYS);
  const sizes = await Promise.all(
    keys.slice(0, SCAN_KEYS).map(async (key) => ({ key, bytes: Number((await redis.memory('USAGE', key)) ?? 0) })),
  );
  sizes.sort((a, b) => b.bytes - a.bytes);
  return { largest: sizes.slice(0, NAMED_KEYS), bytes: sizes.reduce((sum, k) => sum + k.bytes, 0), keys: sizes.length };
}

/** The REDIS_OOM error for a refused write (`cause`), with what filled Redis when it can tell. */
export async function redisOomError(
  redis: Redis,
  prefix: string,
  cause: unknown,
  doing: string,
): Promise<UserInputError> {
  const [memory, orch] = await Promise.all([
    redis.info('memory').then(
      (s) => ({
        used: Number(/used_memory:(\d+)/.exec(s)?.[1] ?? 0),
        max: Number(/maxmemory:(\d+)/.exec(s)?.[1] ?? 0),
      }),
      () => null,
    ),
    orchMemory(redis, prefix).catch(() => null),
  ]);
  const mem =
    memory && memory.max > 0 ? ` (used ${formatBytes(memory.used)} of maxmemory ${formatBytes(memory.max)})` : '';
  let filled = '';
  if (orch && orch.keys > 0) {
    filled = `orch's ${orch.keys} keys under "${prefix}" hold ${formatBytes(orch.bytes)}${memory ? ` of the ${formatBytes(memory.used)} used` : ''}, the largest ${orch.largest.map((k) => `${k.key} (${formatBytes(k.bytes)})`).join(', ')}; `;
  }
  return new UserInputError(
    'REDIS_OOM',
    `Redis refused to write while ${doing}: it is at maxmemory${mem} and evicts nothing (noeviction)`,
    {
      cause,
      hint: `${filled}raise maxmemory (redis-cli CONFIG SET maxmemory <bytes>, and in redis.conf), lower what the experiments print, or stop the experiment that fills it with \`orch cancel <id>\``,
    },
  );
}
