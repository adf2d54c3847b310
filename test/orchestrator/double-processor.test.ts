// One processor per block attempt (real redis-server, a real worker process, the production
// Scheduler in-process): the block job's BullMQ lock lapses while its attempt runs — what a Redis
// pause longer than the lock does — so BullMQ's stalled check hands the job back and the same
// leader receives it a second time. The second delivery joins the live processor: no second
// processor re-attaches beside it, the block runs one attempt, and each rep runs once.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { QUEUES } from '../../store/keys.ts';
import { startRedisServer, type RedisServerProcess } from '../../store/redis-server-process.ts';
import { client, freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';
import { spawnWorker, type WorkerProcess } from '../utils/worker-process.ts';
import { abSpec, startScheduler, submitYaml, waitEnded, type InProcessScheduler } from './in-process-scheduler.ts';

let server: RedisServerProcess;
let redis: Redis;
let dir: string;
let worker: WorkerProcess | null = null;
let sched: InProcessScheduler | null = null;
before(async () => {
  server = await startRedisServer();
  redis = client(server.url);
  dir = mkdtempSync(join(tmpdir(), 'orch-double-'));
});
after(async () => {
  await sched?.stop();
  worker?.kill();
  await worker?.exited;
  redis.disconnect();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('a block job delivered again while its processor runs never gets a second processor', async () => {
  const prefix = freshPrefix('dp');
  const log = join(dir, 'ranks.jsonl');
  worker = await spawnWorker({ redisUrl: server.url, host: 'h1', prefix, lockDir: join(dir, 'locks'), cards: 'cpu:0', env: { FIXTURE_LOG: log, FIXTURE_REP_MS: '500' } });
  sched = await startScheduler({ url: server.url, prefix, lockMs: 1000 });
  const id = await submitYaml(redis, prefix, dir, 'double', abSpec('double', 1, 4));
  const store = new ExperimentStore(redis, prefix);
  await waitFor('block 0 running', async () => (await store.block(id, 0))?.phase === 'running', { timeoutMs: 30_000 });

  // The lock lapses (deleted, as its TTL runs out during a Redis pause) until BullMQ re-delivers.
  const blocks = new Queue(QUEUES.blocks, { connection: redis, prefix });
  const jobId = `${id}.b0`;
  try {
    await waitFor('block job re-delivered after its lock lapsed', async () => {
      await redis.del(blocks.toKey(`${jobId}:lock`));
      const job = await Job.fromId(blocks, jobId);
      return job !== undefined && job.stalledCounter >= 1 && (await job.getState()) === 'active';
    }, { timeoutMs: 20_000, intervalMs: 100 });
  } finally {
    await blocks.close();
  }
  assert.equal(await waitEnded(redis, prefix, id, 60_000), 'done');

  const lines = sched.log().filter((l) => l.experiment === id || String(l.key ?? '').startsWith(id));
  const second = lines.filter((l) => l.msg === 're-attaching to the attempt in flight');
  assert.deepEqual(second, [], 'no second processor re-attached beside the live one');
  assert.ok(lines.some((l) => String(l.msg).startsWith('block job delivered again')), 'the second delivery joined the live processor');
  const b0 = (await store.block(id, 0))!;
  assert.deepEqual(b0.attempts.map((a) => [a.attempt, a.outcome]), [[1, 'committed']]);
  const starts = readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { ev: string }).filter((e) => e.ev === 'start');
  assert.equal(starts.length, 1, 'one rank process for the block');
  assert.equal(await redis.hlen(`${prefix}:experiment:${id}:results`), 8, 'every rep measured once');
});
