/**
 * A Redis that restarts: without persistence its data is gone, and every orch process must see
 * that rather than act on a world that no longer exists — lease epochs keep growing (never 1
 * again, which a stale worker could still hold), no Lua write lands orphan experiment keys in the
 * fresh Redis, workers register their cards again, and a waiting submit ends with the reason.
 * With persistence (AOF) nothing is lost and nothing is reported lost.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { waitForEnd } from '../../orchestrator/experiment/progress.ts';
import { submitExperiment } from '../../orchestrator/experiment/submit.ts';
import { loadSpec } from '../../orchestrator/spec/load-spec.ts';
import { CardRegistry } from '../../store/card-registry.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { orchKeys } from '../../store/keys.ts';
import { LeaseStore } from '../../store/lease-store.ts';
import { warnIfNotPersistent } from '../../store/redis-instance.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { ResultStore } from '../../store/result-store.ts';
import { EventStream } from '../../worker/event-stream.ts';
import { client, freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';
import { spawnWorker, type WorkerProcess } from '../utils/worker-process.ts';

const SPEC = `name: restart
design: ab
workload: { runtime: native, backend: cpu, kind: chain, params: { kernels: 4 }, warmup: 1, steps: 2 }
toggles: [graph]
arms:
  - { name: eager, toggles: { graph: false } }
  - { name: graph, toggles: { graph: true } }
reps: 2
gates: { identity: false, aa: false }
metric: { name: ms, better: lower }
`;

/** Stops `server` and starts a new one on its port with its password: the same URL. */
async function restart(server: RedisServerProcess, config: Record<string, string> = {}): Promise<RedisServerProcess> {
  await server.stop();
  return startRedisServer({ port: server.port, password: server.password, config });
}

describe('redis restart', () => {
  const dir = mkdtempSync(join(tmpdir(), 'orch-restart-'));
  const cleanup: (() => Promise<void> | void)[] = [];
  after(async () => {
    for (const f of cleanup.reverse()) await f();
    rmSync(dir, { recursive: true, force: true });
  });

  async function connect(server: RedisServerProcess): Promise<Redis> {
    const redis = client(server.url);
    cleanup.push(() => redis.disconnect());
    return redis;
  }

  test('without persistence: epochs keep growing, no orphan keys, cards registered again, the waiting submit ends with the reason', async () => {
    let server = await startRedisServer();
    cleanup.push(() => server.stop());
    const prefix = freshPrefix();
    const keys = orchKeys(prefix);
    const redis = await connect(server);
    const worker: WorkerProcess = await spawnWorker({
      redisUrl: server.url,
      prefix,
      host: 'rr',
      cards: 'cpu:0',
      lockDir: join(dir, 'locks'),
      heartbeatMs: 300,
    });
    cleanup.push(() => worker.kill());

    const before = await new LeaseStore(redis, { prefix }).acquireGang({
      cards: ['cpu:9@zz'],
      owner: 'zz',
      ttlMs: 60_000,
      experiment: 'e',
      block: 0,
    });
    assert.ok(before.granted);
    writeFileSync(join(dir, 'restart.yaml'), SPEC);
    const loaded = loadSpec(join(dir, 'restart.yaml'));
    const sub = await submitExperiment({ redis, prefix, loaded });
    const exp = (await new ExperimentStore(redis, prefix).get(sub.id))!;
    const waiting = waitForEnd(redis, prefix, exp, { signal: AbortSignal.timeout(60_000) }).then(
      (state) => ({ state, err: null as unknown }),
      (err: unknown) => ({ state: null, err }),
    );

    server = await restart(server);
    const ended = await waiting;
    assert.equal(
      (ended.err as { code?: string } | null)?.code,
      'REDIS_DATA_LOST',
      `the waiting submit ended with ${JSON.stringify(ended)}`,
    );
    assert.match(
      (ended.err as Error).message,
      new RegExp(`experiment ${sub.id} no longer exists: Redis restarted without its data`),
    );

    await waitFor(
      'the worker to register its card again',
      async () => (await new CardRegistry(redis, { prefix }).liveCards('rr')).length === 1,
      { timeoutMs: 15_000 },
    );
    assert.ok(worker.log().includes('Redis lost its data'), 'the worker says why it registered again');

    const afterRestart = await new LeaseStore(redis, { prefix }).acquireGang({
      cards: ['cpu:9@zz'],
      owner: 'zz',
      ttlMs: 60_000,
      experiment: 'e',
      block: 0,
    });
    assert.ok(
      afterRestart.granted && before.granted && afterRestart.epoch > before.epoch,
      `epoch after the restart ${JSON.stringify(afterRestart)} is not above ${JSON.stringify(before)}`,
    );

    // a stale worker's writes for the lost experiment land nothing
    const results = new ResultStore(redis, { prefix });
    assert.equal(
      await results.failReps(sub.id, 0, 1, [{ block: 0, arm: 'eager', rep: 0, position: 0, reason: 'x' }]),
      -1,
    );
    const events = new EventStream(
      redis,
      { stream: keys.events(sub.id), exp: keys.exp(sub.id), budget: keys.eventBudget(sub.id) },
      pino({ level: 'silent' }),
    );
    events.emit({ block: 0, attempt: 1, epoch: 1, host: 'rr', card: 'cpu:0@rr', rank: 0 }, '{"v":1}');
    await events.flush();
    const orphans = await redis.keys(`${prefix}:experiment:*`);
    assert.deepEqual(orphans, [], 'orphan experiment keys in the fresh Redis');
  });

  test('with persistence (AOF): nothing lost, nothing reported lost, no warning', async () => {
    const data = mkdtempSync(join(dir, 'aof-'));
    const config = { dir: data, appendonly: 'yes', appendfsync: 'always' };
    let server = await startRedisServer({ config });
    cleanup.push(() => server.stop());
    const prefix = freshPrefix();
    const redis = await connect(server);
    assert.equal(await warnIfNotPersistent(redis, pino({ level: 'silent' }), 'test'), false);
    const worker = await spawnWorker({
      redisUrl: server.url,
      prefix,
      host: 'ra',
      cards: 'cpu:0',
      lockDir: join(dir, 'locks'),
      heartbeatMs: 300,
    });
    cleanup.push(() => worker.kill());
    writeFileSync(join(dir, 'restart-aof.yaml'), SPEC);
    const loaded = loadSpec(join(dir, 'restart-aof.yaml'));
    const sub = await submitExperiment({ redis, prefix, loaded });

    server = await restart(server, config);
    await waitFor(
      'the worker heartbeats into the restarted Redis',
      async () => (await new CardRegistry(redis, { prefix }).liveCards('ra')).length === 1,
      { timeoutMs: 15_000 },
    );
    assert.ok((await new ExperimentStore(redis, prefix).get(sub.id)) !== null, 'the experiment survived');
    assert.ok(!worker.log().includes('Redis lost its data'), 'a persistent restart was reported as a loss');
  });

  test('a Redis without persistence is warned about', async () => {
    const server = await startRedisServer();
    cleanup.push(() => server.stop());
    const redis = await connect(server);
    assert.equal(await warnIfNotPersistent(redis, pino({ level: 'silent' }), 'test'), true);
  });
});
