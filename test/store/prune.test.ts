/**
 * Retention of experiments in Redis: `orch prune --older-than AGE` removes every key of the
 * experiments that ended more than AGE ago (`--dry-run` lists them and removes nothing), and never
 * a queued or running one; an ended experiment's keys get an expiry once its results are written
 * (ORCH_EXPERIMENT_TTL_DAYS), a running one's never.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import {
  DEFAULT_TTL_DAYS,
  ExperimentRetention,
  experimentTtlSeconds,
  TTL_ENV,
} from '../../store/experiment-retention.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { orchKeys } from '../../store/keys.ts';
import { runOrch } from '../cli/run-orch.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';

/** Registers an experiment as submit does (its hash, its blocks, its place in the queue) and moves it to `state`. */
async function experiment(
  store: ExperimentStore,
  id: string,
  state: 'running' | 'done' | 'failed' | 'cancelled',
): Promise<void> {
  await store.register(id, { id, name: id.replace(/-\d+$/, ''), state: 'queued', created: String(Date.now()) }, [
    ['0', '{}'],
    ['1', '{}'],
  ]);
  if (state === 'running') await store.advance(id, 'running');
  else await store.finish(id, state, state === 'done' ? null : `it ${state}`);
}

async function keysOf(redis: Redis, prefix: string, id: string): Promise<string[]> {
  const own = orchKeys(prefix).exp(id);
  return [...(await redis.keys(own)), ...(await redis.keys(`${own}:*`))].sort();
}

describe('experiment retention', { timeout: 120_000 }, () => {
  const r = privateRedis();

  it("orch prune: the ended experiments' keys are gone, a running experiment untouched; --dry-run removes nothing", async () => {
    const { redis, server } = r;
    const prefix = freshPrefix();
    const store = new ExperimentStore(redis, prefix);
    const ended = ['old-done-1', 'old-failed-2', 'old-cancelled-3'];
    await experiment(store, ended[0]!, 'done');
    await experiment(store, ended[1]!, 'failed');
    await experiment(store, ended[2]!, 'cancelled');
    await experiment(store, 'running-4', 'running');
    const before = new Map(
      await Promise.all([...ended, 'running-4'].map(async (id) => [id, await keysOf(redis, prefix, id)] as const)),
    );
    for (const [id, keys] of before) assert.equal(keys.length, 2, `${id}: ${keys}`);
    const env = { REDIS_URL: server.url, ORCH_PREFIX: prefix };

    const young = runOrch(['prune', '--older-than', '1d', '--json'], env);
    assert.equal(young.status, 0, young.stderr);
    assert.deepEqual(JSON.parse(young.stdout).experiments, [], 'nothing ended a day ago');

    const dry = runOrch(['prune', '--older-than', '0s', '--dry-run', '--json'], env);
    assert.equal(dry.status, 0, dry.stderr);
    assert.deepEqual(
      (JSON.parse(dry.stdout).experiments as { id: string }[]).map((e) => e.id),
      ended,
    );
    for (const [id, keys] of before)
      assert.deepEqual(await keysOf(redis, prefix, id), keys, `--dry-run removed keys of ${id}`);

    const real = runOrch(['prune', '--older-than', '0s'], env);
    assert.equal(real.status, 0, real.stderr);
    for (const id of ended) assert.match(real.stdout, new RegExp(`^removed ${id} \\(`, 'm'));
    assert.match(real.stdout, /removed 3 experiments ended over 0s ago; results directories are kept/);
    for (const id of ended) assert.deepEqual(await keysOf(redis, prefix, id), [], `${id}'s keys are left`);
    assert.deepEqual(await store.list(), ['running-4']);
    assert.deepEqual(await keysOf(redis, prefix, 'running-4'), before.get('running-4'));
    assert.equal(await store.state('running-4'), 'running');
  });

  it('an expiry on every key of an ended experiment once its results are written; none on a running one', async () => {
    const { redis } = r;
    const prefix = freshPrefix();
    const store = new ExperimentStore(redis, prefix);
    await experiment(store, 'ended-1', 'done');
    await experiment(store, 'running-2', 'running');
    const retention = new ExperimentRetention(redis, prefix);
    const ttl = experimentTtlSeconds({});
    assert.equal(ttl, DEFAULT_TTL_DAYS * 24 * 3600);
    assert.equal(await retention.expire('ended-1', ttl!), true);
    for (const key of await keysOf(redis, prefix, 'ended-1')) {
      const left = await redis.ttl(key);
      assert.ok(left > 0 && left <= ttl!, `${key}: ttl ${left}`);
    }
    assert.equal(await retention.expire('running-2', ttl!), false);
    for (const key of await keysOf(redis, prefix, 'running-2'))
      assert.equal(await redis.ttl(key), -1, `${key} of a running experiment expires`);
    assert.equal(experimentTtlSeconds({ [TTL_ENV]: '0' }), null, '0 keeps the keys');
    assert.equal(experimentTtlSeconds({ [TTL_ENV]: '0.5' }), 12 * 3600);
    assert.throws(
      () => experimentTtlSeconds({ [TTL_ENV]: 'a week' }),
      /ORCH_EXPERIMENT_TTL_DAYS=a week: not a number of days/,
    );
  });
});
