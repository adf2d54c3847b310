/**
 * A worker cut off from Redis: its ranks die once no lease renew has succeeded within the lease
 * TTL by the worker's own clock (the Redis it renews against is SIGSTOPped, so the renew never
 * answers); SIGTERM ends the worker within its stop limit though Redis is gone; a Redis that
 * goes away is retried and logged, never an unhandled ioredis error event (subscriber included).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Redis } from 'ioredis';
import { LeaseStore } from '../../store/lease-store.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { BareExperimentDispatcher, blockJob } from '../utils/block-jobs.ts';
import { rankPids, waitForEvents } from '../utils/events.ts';
import { isAlive, waitGone } from '../utils/processes.ts';
import { client, freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';
import { spawnWorker, type WorkerProcess } from '../utils/worker-process.ts';

const HB = 400;
const TTL = 2 * HB;
/** the worker's stop limit (10 s) plus room for a loaded machine */
const STOP_BOUND_MS = 25_000;

describe('a worker cut off from Redis', { timeout: 120_000 }, () => {
  let dir: string;
  const servers: RedisServerProcess[] = [];
  const workers: WorkerProcess[] = [];
  const clients: Redis[] = [];
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'orch-cutoff-'));
  });
  after(async () => {
    for (const w of workers) w.kill();
    await Promise.all(workers.map((w) => w.exited));
    for (const c of clients) c.disconnect();
    for (const s of servers) {
      s.child.kill('SIGCONT');
      await s.stop();
    }
    rmSync(dir, { recursive: true, force: true });
  });

  test('Redis stopped mid-block: the ranks die within the lease TTL by the local clock; SIGTERM still ends the worker', async () => {
    const server = await startRedisServer();
    servers.push(server);
    const redis = client(server.url);
    clients.push(redis);
    const prefix = freshPrefix();
    const w = await spawnWorker({
      redisUrl: server.url,
      host: 'c1',
      prefix,
      cards: 'cpu:0',
      lockDir: join(dir, 'l1'),
      heartbeatMs: HB,
      env: { FIXTURE_REP_MS: '200' },
    });
    workers.push(w);
    const leases = new LeaseStore(redis, { prefix });
    const g = await leases.acquireGang({ cards: ['cpu:0@c1'], owner: 'c1', ttlMs: 5000, experiment: 'x', block: 0 });
    assert.ok(g.granted);
    const job = blockJob({
      experiment: 'x',
      block: 0,
      attempt: 1,
      epoch: g.epoch,
      host: 'c1',
      cards: ['cpu:0@c1'],
      sequence: Array.from({ length: 200 }, (_, i) => (i % 2 ? 'A' : 'B')),
    });
    const dispatcher = new BareExperimentDispatcher(redis, { prefix, pollMs: 20 });
    try {
      await dispatcher.dispatch(job);
      const evs = await waitForEvents(
        redis,
        prefix,
        'x',
        'a rep',
        (e) => e.some((x) => x.event.type === 'rep'),
        15_000,
      );
      const pids = rankPids(evs, 1);
      assert.equal(pids.length, 1);
      assert.ok(pids.every(isAlive));
    } finally {
      await dispatcher.close();
    }
    const pids = rankPids(await waitForEvents(redis, prefix, 'x', 'hello', () => true, 1000), 1);
    redis.disconnect();

    server.child.kill('SIGSTOP');
    const t0 = Date.now();
    // generous upper bound: the local deadline is one TTL; before it, nothing killed them at all
    await waitGone(pids, t0, 10 * TTL);
    await waitFor(
      'the worker to log why it killed them',
      () => /no lease renew succeeded for \d+ ms \(lease TTL 800 ms, by this host's clock\)/.test(w.log()),
      { timeoutMs: 5000 },
    );
    assert.equal(w.child.exitCode, null, 'the worker itself stays up');

    w.child.kill('SIGTERM');
    const killer = setTimeout(() => w.kill(), STOP_BOUND_MS);
    const exit = await w.exited;
    clearTimeout(killer);
    assert.notEqual(
      exit.signal,
      'SIGKILL',
      `SIGTERM ended the worker within ${STOP_BOUND_MS} ms though Redis does not answer`,
    );
    assert.match(w.log(), /graceful stop did not finish in time/);
  });

  test('Redis gone: reconnects are logged, no unhandled ioredis error event, SIGTERM ends the worker', async () => {
    const server = await startRedisServer();
    servers.push(server);
    const w = await spawnWorker({
      redisUrl: server.url,
      host: 'c2',
      prefix: freshPrefix(),
      cards: 'cpu:0',
      lockDir: join(dir, 'l2'),
      heartbeatMs: HB,
    });
    workers.push(w);
    server.child.kill('SIGKILL');
    await waitFor('three logged reconnect attempts', () => w.log().split('redis unreachable; retrying').length > 3, {
      timeoutMs: 30_000,
    });
    assert.ok(
      !w.log().includes('Unhandled error event'),
      w
        .log()
        .split('\n')
        .filter((l) => l.includes('Unhandled'))
        .join('\n'),
    );

    w.child.kill('SIGTERM');
    const killer = setTimeout(() => w.kill(), STOP_BOUND_MS);
    const exit = await w.exited;
    clearTimeout(killer);
    assert.notEqual(exit.signal, 'SIGKILL', `SIGTERM ended the worker within ${STOP_BOUND_MS} ms though Redis is gone`);
  });
});
