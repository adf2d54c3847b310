/**
 * A Redis that restarts without its data under a running scheduler: the scheduler notices on its
 * own tick (the instance marker, store/redis-instance.ts), reports each experiment it followed as
 * failed with the reason once, starts a fresh term (no processor waits on a world that is gone,
 * nothing loops), and runs an experiment submitted afterwards to the end. `orch serve` warns at
 * start about a Redis that keeps nothing across a restart.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';
import { useWorkerEnv } from '../utils/worker-env.ts';
import { abSpec, startScheduler, submitYaml, waitEnded } from './in-process-scheduler.ts';
import { type OrchChild, spawnOrch } from './orch-cluster.ts';

describe('the scheduler and a Redis that lost its data', () => {
  const env = useWorkerEnv('data-lost');
  const extra: (() => Promise<void>)[] = [];
  after(async () => {
    for (const f of extra.reverse()) await f();
  });

  test('experiments it followed are reported failed once, a fresh term runs the next experiment', async () => {
    const prefix = freshPrefix();
    await env.spawn({ prefix, host: 'dl', cards: 'cpu:0', heartbeatMs: 300, env: { FIXTURE_REP_MS: '300' } });
    const sched = await startScheduler({ url: env.server.url, prefix, grantTtlMs: 3000, safetyPollMs: 300 });
    // stopped in the test, while its Redis still runs: the worker env's own after() stops the
    // server first, and a scheduler stopping against a Redis gone kept the test process alive
    try {
      const lost = await submitYaml(env.redis, prefix, env.dir, 'lost', abSpec('lost', 2, 10));
      await waitFor(
        'the experiment runs',
        async () => (await env.redis.hget(`${prefix}:experiment:${lost}`, 'state')) === 'running',
        { timeoutMs: 30_000 },
      );

      const { port, password } = env.server;
      await env.server.stop();
      env.server = await startRedisServer({ port, password });

      const reported = (l: { msg: string }) =>
        l.msg.includes(`experiment ${lost} failed: it no longer exists: Redis lost its data`);
      await waitFor('the scheduler to report the lost experiment', () => sched.log().some(reported), {
        timeoutMs: 30_000,
      });
      await waitFor(
        'a fresh term',
        () => sched.log().filter((l) => l.msg === 'scheduler: elected leader').length >= 2,
        { timeoutMs: 30_000 },
      );

      const next = await submitYaml(env.redis, prefix, env.dir, 'next', abSpec('next', 1, 2));
      assert.equal(
        await waitEnded(env.redis, prefix, next, 60_000),
        'done',
        'the experiment submitted after the loss ran to the end',
      );
      assert.equal(sched.log().filter(reported).length, 1, 'the lost experiment was reported once, not in a loop');
      assert.equal(sched.log().filter((l) => l.msg.startsWith('scheduler: Redis lost its data')).length, 1);
    } finally {
      await sched.stop();
    }
  });

  test('orch serve warns at start about a Redis without RDB and AOF', async () => {
    const server: RedisServerProcess = await startRedisServer();
    let serve: OrchChild | null = spawnOrch(['serve', '--json'], {
      REDIS_URL: server.url,
      ORCH_PREFIX: freshPrefix(),
      ORCH_LOG: 'warn',
    });
    extra.push(async () => {
      serve?.child.kill('SIGKILL');
      await serve?.exited;
      await server.stop();
    });
    await waitFor('the warning', () => serve!.out().includes('orch serve: this Redis keeps nothing across a restart'), {
      timeoutMs: 30_000,
    });
    serve.child.kill('SIGTERM');
    await serve.exited;
    serve = null;
  });
});
