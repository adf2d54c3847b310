/**
 * `orch status`'s cards say what a spec's workload.requires is held to: a cuda card its memory
 * (GiB) and compute capability as its worker read them from nvidia-smi, "not reported" where the
 * driver did not say; a cpu card nothing (real redis-server, cards registered as a worker does).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { clusterStatus, renderStatus } from '../../orchestrator/experiment/cluster-status.ts';
import { CardRegistry } from '../../store/card-registry.ts';
import { orchKeys } from '../../store/keys.ts';
import { cpuCard, gpuCard } from '../../worker/discover-cards.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';

const env = privateRedis();
after(() => env.server.stop());

test("status lists a cuda card's memory and compute capability, and says when they were not reported", async () => {
  const prefix = freshPrefix('sc');
  const registry = new CardRegistry(env.redis, { prefix });
  // as nvidia-smi printed them on the H200: 143771 MiB, compute_cap 9.0
  const h200 = gpuCard('g1', {
    index: 0,
    uuid: 'GPU-aaaa',
    name: 'NVIDIA H200',
    memory_mib: 143771,
    compute_capability: '9.0',
  });
  const old = gpuCard('g1', { index: 1, uuid: 'GPU-bbbb', name: 'an older driver' });
  await registry.register('g1', [h200, old], { ttlMs: 10_000, pid: process.pid });
  await registry.register('c1', [cpuCard('c1', 0)], { ttlMs: 10_000, pid: process.pid });
  const s = await clusterStatus(env.redis, prefix, {});
  const text = renderStatus(s);
  console.log(text);
  assert.match(text, /^ {2}GPU-aaaa +g1 +cuda +alive +free \(140 GiB, cc 9\.0\)$/m);
  assert.match(text, /^ {2}GPU-bbbb +g1 +cuda +alive +free \(memory and cc not reported\)$/m);
  assert.match(text, /^ {2}cpu:0@c1 +c1 +cpu +alive +free$/m);
  const json = s.cards.find((c) => c.id === 'GPU-aaaa');
  assert.equal(json?.memory_mib, 143771);
  assert.equal(json?.compute_capability, '9.0');
});

test('a card field that is not a card (anyone may write Redis) is skipped: status and the grant pass still read the others', async () => {
  const prefix = freshPrefix('sb');
  const registry = new CardRegistry(env.redis, { prefix });
  await registry.register('c1', [cpuCard('c1', 0)], { ttlMs: 10_000, pid: process.pid });
  const cards = orchKeys(prefix).cards;
  await env.redis.hset(cards, 'planted-1', 'not json {', 'planted-2', JSON.stringify({ id: 'x' }));
  assert.deepEqual(
    (await registry.liveCards()).map((c) => c.id),
    ['cpu:0@c1'],
  );
  const text = renderStatus(await clusterStatus(env.redis, prefix, {}));
  assert.match(text, /^ {2}cpu:0@c1 +c1 +cpu +alive +free$/m);
});
