/**
 * A gang of 2 whose one rank exits non-zero: the other rank is killed at once, the block fails
 * with the rank, exit code and last error line in BullMQ's failedReason (the exact text), as an
 * UnrecoverableError for a deterministic exit code and a plain error for a signal; every planned
 * rep is reported failed with that reason and the leases are free.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { BlockDispatcher } from '../../orchestrator/dispatch/block-dispatcher.ts';
import { LeaseStore } from '../../orchestrator/redis/lease-store.ts';
import { startRedisServer, type RedisServerProcess } from '../../orchestrator/redis/redis-server-process.ts';
import { ResultStore } from '../../orchestrator/redis/result-store.ts';
import { blockJob } from '../utils/block-jobs.ts';
import { rankPids, readEvents } from '../utils/events.ts';
import { isAlive } from '../utils/processes.ts';
import { client, freshPrefix } from '../utils/redis.ts';
import { spawnWorker, type WorkerProcess } from '../utils/worker-process.ts';

describe('a rank of a gang fails', () => {
  let server: RedisServerProcess;
  let redis: Redis;
  let dir: string;
  const workers: WorkerProcess[] = [];
  before(async () => {
    server = await startRedisServer();
    redis = client(server.url);
    dir = mkdtempSync(join(tmpdir(), 'orch-gang-'));
  });
  after(async () => {
    for (const w of workers) w.kill();
    redis.disconnect();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function runGang(host: string, fail: string) {
    const prefix = freshPrefix();
    const log = join(dir, `${host}.jsonl`);
    // request 1 is the identity gate of arm B; rank 1's 3rd request is the 2nd rep
    const w = await spawnWorker({
      redisUrl: server.url, prefix, host, lockDir: join(dir, 'locks'), cards: 'cpu:0,cpu:1',
      env: { FIXTURE_LOG: log, FIXTURE_FAIL: fail, FIXTURE_REP_MS: '150' },
    });
    workers.push(w);
    const leases = new LeaseStore(redis, { prefix });
    const dispatcher = new BlockDispatcher(redis, { prefix, pollMs: 20 });
    const cards = [`cpu:0@${host}`, `cpu:1@${host}`];
    const g = await leases.acquireGang({ cards, owner: host, ttlMs: 5000, experiment: 'g', block: 0 });
    assert.ok(g.granted);
    const job = blockJob({ experiment: 'g', block: 0, attempt: 1, epoch: g.epoch, host, cards });
    await dispatcher.dispatch(job);
    const end = await dispatcher.waitEnd(job, { timeoutMs: 30_000 });
    await dispatcher.close();
    const ranks = readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { ev: string; rank: number; pid: number; t: number });
    const pids = rankPids(await readEvents(redis, prefix, 'g'), 1);
    return { end, ranks, pids, leases, results: new ResultStore(redis, { prefix }), cards, job };
  }

  test('rank 1 exits with code 3: rank 0 killed, UnrecoverableError with rank, exit code and last error line', async () => {
    const { end, ranks, pids, leases, results, cards } = await runGang('f1', '1:3:3');
    const pid1 = ranks.find((r) => r.ev === 'start' && r.rank === 1)?.pid;
    assert.deepEqual(end, {
      state: 'failed', jobId: 'g.b0-a1-f1', unrecoverable: true,
      reason: `rank 1 on card cpu:1@f1 (pid ${pid1}) exited with code 3, signal none; last error: INTERNAL: fixture rank 1 failing at request 3`,
    });
    assert.equal(pids.length, 2);
    assert.ok(pids.every((p) => !isAlive(p)), 'both ranks are gone');
    assert.deepEqual(ranks.filter((r) => r.rank === 0).map((r) => r.ev), ['start'], 'rank 0 was killed (it never reached its orderly end)');
    assert.deepEqual(await leases.held(cards), []);
    const failed = await results.failed('g');
    assert.deepEqual(Object.keys(failed).sort(), ['0/A/0', '0/A/1', '0/B/0', '0/B/1']);
    assert.equal(failed['0/A/1']?.reason, `attempt 1 failed: ${end.state === 'failed' ? end.reason : ''}`);
    assert.deepEqual(await results.results('g'), {});
  });

  test('rank 0 dies of SIGSEGV: a plain (retryable) failure naming the signal', async () => {
    const { end, ranks } = await runGang('f2', '0:2:SIGSEGV');
    const pid0 = ranks.find((r) => r.ev === 'start' && r.rank === 0)?.pid;
    assert.deepEqual(end, {
      state: 'failed', jobId: 'g.b0-a1-f2', unrecoverable: false,
      reason: `rank 0 on card cpu:0@f2 (pid ${pid0}) was killed by SIGSEGV; last error: INTERNAL: fixture rank 0 failing at request 2`,
    });
  });
});
