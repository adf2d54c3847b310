/**
 * `orch serve` stopped while its Redis is gone still ends: the leader lease's release and the
 * block workers' close are bounded (the lease's TTL and the jobs' locks cover what they were for).
 * Before, the release waited for a reconnect that never came and the process stayed up.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { settleWithin } from '../../jobs/settle-within.ts';
import { startRedisServer } from '../../store/redis-server-process.ts';
import { freshPrefix } from '../utils/redis.ts';
import { startScheduler } from './in-process-scheduler.ts';

test('a leading scheduler whose Redis is gone stops within a bound', async () => {
  const server = await startRedisServer();
  const sched = await startScheduler({ url: server.url, prefix: freshPrefix('stop') });
  await server.stop();
  const t0 = Date.now();
  const ended = await settleWithin(sched.stop(), 30_000);
  console.log(`# stop took ${Date.now() - t0} ms with Redis gone`);
  assert.ok(ended, 'Scheduler.stop() did not end within 30 s of its Redis going away');
});
