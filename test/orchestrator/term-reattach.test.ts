// One processor per block attempt across a term (real redis-server, a real worker process, the
// production Scheduler in-process): the leader's lease lapses while a block's attempt runs —
// what a Redis pause longer than the lease does — so the scheduler steps down and is elected
// again. The old term's processor stops; the new term's first pass reads the block running and
// its processor re-attaches to the attempt in flight, once: the block runs one attempt, and
// each rep runs once.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Redis } from 'ioredis';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { orchKeys } from '../../store/keys.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { client, freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';
import { spawnWorker, type WorkerProcess } from '../utils/worker-process.ts';
import { abSpec, type InProcessScheduler, startScheduler, submitYaml, waitEnded } from './in-process-scheduler.ts';

let server: RedisServerProcess;
let redis: Redis;
let dir: string;
let worker: WorkerProcess | null = null;
let sched: InProcessScheduler | null = null;
before(async () => {
  server = await startRedisServer();
  redis = client(server.url);
  dir = mkdtempSync(join(tmpdir(), 'orch-term-'));
});
after(async () => {
  await sched?.stop();
  worker?.kill();
  await worker?.exited;
  redis.disconnect();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('a new term re-attaches to the attempt in flight once: one attempt, every rep once', async () => {
  const prefix = freshPrefix('tr');
  const rankLog = join(dir, 'ranks.jsonl');
  worker = await spawnWorker({
    redisUrl: server.url,
    host: 'h1',
    prefix,
    lockDir: join(dir, 'locks'),
    cards: 'cpu:0',
    env: { FIXTURE_LOG: rankLog, FIXTURE_REP_MS: '500' },
  });
  sched = await startScheduler({ url: server.url, prefix });
  const id = await submitYaml(redis, prefix, dir, 'double', abSpec('double', 1, 4));
  const store = new ExperimentStore(redis, prefix);
  await waitFor('block 0 running', async () => (await store.block(id, 0))?.phase === 'running', { timeoutMs: 30_000 });

  // The lease is taken by another candidate for 1.5 s (as after a Redis pause longer than its
  // TTL): the renewal fails, the term ends, and once that lease lapses the scheduler leads again.
  await redis.set(orchKeys(prefix).sched.leader, 'another-candidate', 'PX', 1500);
  await waitFor('a second term', () => sched!.log().filter((l) => l.msg === 'scheduler: elected leader').length === 2, {
    timeoutMs: 20_000,
  });
  assert.equal(await waitEnded(redis, prefix, id, 60_000), 'done');

  const log = sched.log();
  assert.ok(
    log.some((l) => l.msg === 'scheduler: not leading any more'),
    'the first term ended',
  );
  const reattached = log.filter((l) => l.msg === 're-attaching to the attempt in flight' && l.experiment === id);
  assert.equal(reattached.length, 1, 'the new term re-attached once');
  const b0 = (await store.block(id, 0))!;
  assert.deepEqual(
    b0.attempts.map((a) => [a.attempt, a.outcome]),
    [[1, 'committed']],
  );
  const starts = readFileSync(rankLog, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { ev: string })
    .filter((e) => e.ev === 'start');
  assert.equal(starts.length, 1, 'one rank process for the block');
  assert.equal(await redis.hlen(`${prefix}:experiment:${id}:results`), 8, 'every rep measured once');
});
