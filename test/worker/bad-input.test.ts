/**
 * Bad input: a Redis that may evict keys is refused with how to fix it; an unreachable Redis is
 * retried with backoff and logged, in one process, until it comes up; a block payload that fails
 * its zod schema fails that block unrecoverably with the schema error; a malformed ORCH_GANG_PORTS
 * is refused as the worker starts, not at a gang's first block.
 */

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BlockJob } from '../../jobs/block-job.ts';
import { redactUrl } from '../../jobs/redact.ts';
import { CardRegistry } from '../../store/card-registry.ts';
import { freePort, type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { BareExperimentDispatcher, blockJob } from '../utils/block-jobs.ts';
import { client, freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';
import { spawnWorker, type WorkerProcess } from '../utils/worker-process.ts';

describe('worker bad input', () => {
  let dir: string;
  const workers: WorkerProcess[] = [];
  const servers: RedisServerProcess[] = [];
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'orch-bad-'));
  });
  after(async () => {
    for (const w of workers) w.kill();
    for (const s of servers) await s.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('maxmemory-policy other than noeviction: refuses to start and says how to fix it', async () => {
    const server = await startRedisServer({ config: { 'maxmemory-policy': 'allkeys-lru' } });
    servers.push(server);
    const w = await spawnWorker({
      redisUrl: server.url,
      prefix: freshPrefix(),
      host: 'b1',
      lockDir: join(dir, 'locks'),
      noWait: true,
    });
    workers.push(w);
    const exit = await w.exited;
    assert.deepEqual(exit, { code: 2, signal: null });
    assert.ok(
      w
        .log()
        .includes(
          `orch: Redis at ${redactUrl(server.url)} has maxmemory-policy "allkeys-lru"; orch needs "noeviction" (an evicted lease or result key would put two processes on one card or drop a measurement)\n` +
            `  hint: run \`redis-cli -u ${redactUrl(server.url)} CONFIG SET maxmemory-policy noeviction\` and put \`maxmemory-policy noeviction\` in redis.conf so it survives a restart\n`,
        ),
      w.log(),
    );
  });

  test('a malformed ORCH_GANG_PORTS: refuses to start, naming the variable and its fix', async () => {
    const server = await startRedisServer();
    servers.push(server);
    const w = await spawnWorker({
      redisUrl: server.url,
      prefix: freshPrefix(),
      host: 'b4',
      lockDir: join(dir, 'locks'),
      env: { ORCH_GANG_PORTS: '29599-29500' },
      noWait: true,
    });
    workers.push(w);
    // a worker that comes up instead is a failure now, not a hang
    await waitFor(
      'the worker to exit or come up',
      () => w.child.exitCode !== null || w.log().includes('"worker ready"'),
      {
        timeoutMs: 30_000,
      },
    );
    assert.equal(w.log().includes('"worker ready"'), false, `the worker came up:\n${w.log()}`);
    assert.deepEqual(await w.exited, { code: 2, signal: null });
    assert.match(w.log(), /orch: ORCH_GANG_PORTS=29599-29500: expected LOW-HIGH.*\n {2}hint: set ORCH_GANG_PORTS to /);
  });

  test('unreachable Redis: retried with growing backoff and logged, then the worker comes up', async () => {
    const port = await freePort();
    const password = randomBytes(16).toString('hex');
    const url = `redis://:${password}@127.0.0.1:${port}`;
    const prefix = freshPrefix();
    const w = await spawnWorker({ redisUrl: url, prefix, host: 'b2', lockDir: join(dir, 'locks'), noWait: true });
    workers.push(w);
    const retries = () =>
      w
        .log()
        .split('\n')
        .filter((l) => l.includes('redis unreachable; retrying'))
        .map((l) => JSON.parse(l) as { attempt: number; retry_in_ms: number; cause: string });
    await waitFor('four logged retries', () => retries().length >= 4, { timeoutMs: 20_000 });
    const r = retries();
    assert.equal(w.child.exitCode, null, 'still the same process: no crash loop');
    assert.deepEqual(
      r.slice(0, 4).map((x) => [x.attempt, x.retry_in_ms]),
      [
        [1, 100],
        [2, 200],
        [3, 400],
        [4, 800],
      ],
    );
    assert.match(r[1]?.cause ?? '', /ECONNREFUSED/);
    const server = await startRedisServer({ port, password });
    servers.push(server);
    await waitFor('the worker to come up', () => w.log().includes('"worker ready"'), { timeoutMs: 20_000 });
    const redis = client(url);
    try {
      assert.deepEqual(
        (await new CardRegistry(redis, { prefix }).liveCards('b2')).map((c) => c.id),
        ['cpu:0@b2'],
      );
    } finally {
      redis.disconnect();
    }
  });

  test('a payload failing the zod schema fails its block unrecoverably with the schema error', async () => {
    const server = await startRedisServer();
    servers.push(server);
    const prefix = freshPrefix();
    const w = await spawnWorker({ redisUrl: server.url, prefix, host: 'b3', lockDir: join(dir, 'locks') });
    workers.push(w);
    const redis = client(server.url);
    const dispatcher = new BareExperimentDispatcher(redis, { prefix, pollMs: 20 });
    try {
      const bad = {
        ...blockJob({ experiment: 'z', block: 0, attempt: 1, epoch: 1, host: 'b3', cards: ['cpu:0@b3'] }),
        steps: 0,
        sequence: ['A', 'C'],
      } as BlockJob;
      await dispatcher.dispatch(bad);
      const end = await dispatcher.waitEnd(bad, { timeoutMs: 20_000 });
      assert.deepEqual(end, {
        state: 'failed',
        jobId: 'z.b0-a1-b3',
        unrecoverable: true,
        reason: 'invalid block payload: steps: Too small: expected number to be >=1; sequence[1]: unknown arm "C"',
      });
      const job = await dispatcher.queue('b3').getJob('z.b0-a1-b3');
      assert.equal(job?.attemptsMade, 1);
    } finally {
      await dispatcher.close();
      redis.disconnect();
    }
  });
});
