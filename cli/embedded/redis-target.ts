/**
 * Where a command's Redis is: `REDIS_URL` (a shared Redis that `orch serve` and the workers
 * use), checked for `noeviction`, with the key prefix from ORCH_PREFIX (default `orch`).
 * Commands that cannot work without a running cluster (status, watch, cancel, report, serve)
 * say so when REDIS_URL is unset; `orch submit` starts the embedded default instead.
 */
import { readFileSync, type Stats, statSync } from 'node:fs';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { UserInputError } from '../../jobs/errors.ts';
import { redactUrl, urlHasPassword } from '../../jobs/redact.ts';
import { connectRedis, readyWithin, requireNoEviction } from '../../store/connect.ts';
import { DEFAULT_PREFIX } from '../../store/keys.ts';

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

/** What a command's argv may say about its Redis: --redis-url-file (cli/redis-url-option.ts), and orch worker's --redis. */
export interface RedisUrlArgs {
  redis?: string | undefined;
  redisUrlFile?: string | undefined;
}

/**
 * The Redis URL of a command, never from argv when it holds a password (argv is world-readable in
 * `ps` and /proc): `--redis-url-file PATH` (a file only its owner can read), else REDIS_URL, else
 * `--redis URL` when that URL carries no password.
 */
export function redisUrlFromArgs(args: RedisUrlArgs, command: string): string | null {
  if (args.redis !== undefined && urlHasPassword(args.redis)) {
    throw new UserInputError(
      'REDIS_URL_IN_ARGV',
      `--redis ${redactUrl(args.redis)}: a URL with a password on the command line is readable by every local user (ps, /proc/<pid>/cmdline)`,
      {
        hint: `write the URL to a file only you can read (umask 077; echo URL > FILE) and pass --redis-url-file FILE, or export REDIS_URL, then run orch ${command} again`,
      },
    );
  }
  if (args.redisUrlFile !== undefined) return readUrlFile(args.redisUrlFile);
  return redisUrlFromEnv() ?? args.redis ?? null;
}

function readUrlFile(file: string): string {
  let st: Stats;
  try {
    st = statSync(file);
  } catch (err) {
    throw new UserInputError(
      'REDIS_URL_FILE',
      `--redis-url-file ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? err})`,
      {
        hint: 'pass the path of a file holding the Redis URL (redis://:PASSWORD@host:port) on its first line',
      },
    );
  }
  if ((st.mode & 0o077) !== 0 || (process.getuid !== undefined && st.uid !== process.getuid())) {
    throw new UserInputError(
      'REDIS_URL_FILE',
      `--redis-url-file ${file}: mode ${(st.mode & 0o777).toString(8)}, owner uid ${st.uid}: it holds a password, so it must belong to you and be readable by you alone`,
      {
        hint: `chmod 600 ${file} (and chown it to yourself), then run the command again`,
      },
    );
  }
  const url = readFileSync(file, 'utf8').split('\n')[0]?.trim() ?? '';
  if (!/^rediss?:\/\//.test(url)) {
    throw new UserInputError(
      'REDIS_URL_FILE',
      `--redis-url-file ${file}: its first line is not a redis:// or rediss:// URL`,
      {
        hint: 'write the URL alone on the first line: redis://:PASSWORD@host:port',
      },
    );
  }
  return url;
}

export function prefixFromEnv(): string {
  return process.env.ORCH_PREFIX || DEFAULT_PREFIX;
}

export async function connectTarget(url: string, prefix: string, log: Logger, name = 'orch-cli'): Promise<RedisTarget> {
  const redis = connectRedis(url, { log, name, maxBackoffMs: 2000 });
  try {
    await readyWithin(redis, url, {
      hint: 'check REDIS_URL, or unset it to run embedded (a private redis-server for this command)',
    });
    await requireNoEviction(redis, url);
  } catch (err) {
    redis.disconnect();
    throw err;
  }
  return { url, prefix, redis, close: async () => void (await redis.quit().catch(() => redis.disconnect())) };
}

/** For commands that need the cluster's Redis: --redis-url-file, else REDIS_URL, or a clear refusal. */
export async function requireTarget(command: string, log: Logger, args: RedisUrlArgs): Promise<RedisTarget> {
  const url = redisUrlFromArgs(args, command);
  if (!url) {
    throw new UserInputError(
      'NO_REDIS_URL',
      `orch ${command} needs REDIS_URL or --redis-url-file (the Redis that orch serve and the workers use)`,
      {
        hint: 'export REDIS_URL=redis://:PASSWORD@host:6379, or pass --redis-url-file FILE (a 0600 file holding that URL); without either, `orch submit SPEC` runs embedded and prints the report itself',
      },
    );
  }
  return connectTarget(url, prefixFromEnv(), log);
}
