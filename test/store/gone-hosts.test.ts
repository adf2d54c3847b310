/**
 * Hosts that died leave the listings (store/card-registry.ts hostGone): a host not seen for
 * HOST_GONE_AFTER_HEARTBEATS heartbeats, and a Slurm allocation's host once its job's end has
 * passed and it no longer beats, are in neither `orch status` nor the dashboard's /metrics; a
 * live host, and one dead only a moment ago, still are (the latter as dead). A real
 * redis-server, the real `orch status` and a real dashboard.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Card, CardRegistry, HOST_GONE_AFTER_HEARTBEATS, hostGone } from '../../store/card-registry.ts';
import { runOrch } from '../cli/run-orch.ts';
import { testDashboard } from '../dashboard/dashboard-harness.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';

const env = privateRedis();

const card = (host: string): Card => ({
  id: `cpu:0@${host}`,
  host,
  backend: 'cpu',
  index: 0,
  uuid: `cpu:0@${host}`,
  name: 'cpu',
});

test('hostGone: never a live host; a dead one after N heartbeats, a Slurm one after its end', () => {
  const ttlMs = 2000; // two heartbeats of 1 s
  const at = (over: Partial<Parameters<typeof hostGone>[0]>) => ({
    alive: false,
    seen: 0,
    ttlMs,
    slurmEnd: null,
    ...over,
  });
  assert.equal(hostGone(at({ alive: true, seen: -1e9, slurmEnd: -1 }), 0), false);
  assert.equal(hostGone(at({}), HOST_GONE_AFTER_HEARTBEATS * 1000), false);
  assert.equal(hostGone(at({}), HOST_GONE_AFTER_HEARTBEATS * 1000 + 1), true);
  assert.equal(hostGone(at({ slurmEnd: 5 }), 6), true);
  assert.equal(hostGone(at({ seen: null }), 1e12), false, 'unknown: kept');
});

test("orch status and /metrics leave out a host not seen for N heartbeats and an ended Slurm allocation's host", async () => {
  const prefix = freshPrefix('gone');
  const registry = new CardRegistry(env.redis, { prefix });
  await registry.register('live.example', [card('live.example')], { ttlMs: 60_000, pid: 1 });
  await registry.register('just-died.example', [card('just-died.example')], { ttlMs: 60_000, pid: 2 });
  await registry.goOffline('just-died.example');
  // beats every 20 ms (TTL 40 ms): gone after 10 heartbeats, 200 ms without one
  await registry.register('long-dead.example', [card('long-dead.example')], { ttlMs: 40, pid: 3 });
  const slurm = { job: '4242', nodes: 'gpu07', partition: 'p', node: 'gpu07', end: Date.now() - 1000 };
  await registry.register('gpu07-slurm4242', [card('gpu07-slurm4242')], { ttlMs: 60_000, pid: 4, slurm });
  await registry.goOffline('gpu07-slurm4242');
  await waitFor(
    'long-dead.example unseen for 10 heartbeats',
    async () => !(await registry.all()).some((c) => c.host === 'long-dead.example'),
    { timeoutMs: 5000, intervalMs: 50 },
  );

  const status = runOrch(['status'], { REDIS_URL: env.server.url, ORCH_PREFIX: prefix });
  assert.equal(status.status, 0, status.stderr);
  assert.match(status.stdout, /live\.example/);
  assert.match(status.stdout, /just-died\.example/, 'a host dead a moment ago is still shown');
  assert.doesNotMatch(status.stdout, /long-dead\.example|gpu07-slurm4242/, status.stdout);

  const d = await testDashboard({ url: env.server.url, prefix });
  try {
    const metrics = (await d.get('/metrics')).text;
    assert.match(metrics, /host="live\.example"/);
    assert.match(metrics, /host="just-died\.example"/);
    assert.doesNotMatch(metrics, /long-dead\.example|gpu07-slurm4242/);
  } finally {
    await d.close();
  }

  // the worker that comes back is listed again
  await registry.register('long-dead.example', [card('long-dead.example')], { ttlMs: 60_000, pid: 5 });
  assert.ok((await registry.all()).some((c) => c.host === 'long-dead.example'));
});
