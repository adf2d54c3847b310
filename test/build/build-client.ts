/**
 * One build request in its own process, as a worker makes it: `node --import tsx build-client.ts`
 * with ORCH_TEST_BUILD = JSON { root, host, redisUrl?, request }. Prints one JSON line, the
 * EnsuredBuild or { error: { code, message } }, and exits 0 or 3. Tests start several at once
 * and kill some with -9.
 */
import { Redis } from 'ioredis';
import type { OrchError } from '../../jobs/errors.ts';
import { BuildCache, type BuildRequest } from '../../worker/builds/build-cache.ts';

const cfg = JSON.parse(process.env.ORCH_TEST_BUILD ?? '{}') as {
  root: string;
  host: string;
  redisUrl?: string;
  prefix?: string;
  request: BuildRequest;
};
const redis = cfg.redisUrl ? new Redis(cfg.redisUrl, { maxRetriesPerRequest: null }) : undefined;
const cache = new BuildCache({
  root: cfg.root,
  host: cfg.host,
  ...(redis ? { redis, prefix: cfg.prefix ?? 'orch' } : {}),
});
let code = 0;
try {
  const r = await cache.ensure(cfg.request);
  process.stdout.write(`${JSON.stringify({ pid: process.pid, ...r })}\n`);
} catch (err) {
  code = 3;
  const e = err as OrchError;
  process.stdout.write(
    `${JSON.stringify({ pid: process.pid, error: { code: e.code ?? 'BUG', message: e.message } })}\n`,
  );
}
redis?.disconnect();
process.exitCode = code;
