/**
 * The step history backfill reads (store/step-history.ts): folds are atomic, so blocks ending at
 * once all count (the read-then-write in TypeScript lost all but one of them), and the sampler
 * folds at most one ended block per workload per interval.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { readStepHistory, recordStepHistory, StepHistorySampler } from '../../store/step-history.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';

const priv = privateRedis();

describe('step history', () => {
  test('20 blocks folding at once: every step counts, the mean is exact', async () => {
    const { redis } = priv;
    const prefix = freshPrefix();
    await recordStepHistory(redis, prefix, 'w', [10, 20]);
    // ten blocks of 3 ms steps and ten of 5 ms, all in flight together on one connection
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => recordStepHistory(redis, prefix, 'w', [i % 2 ? 3 : 5, i % 2 ? 3 : 5])),
    );
    const h = await readStepHistory(redis, prefix, 'w');
    assert.equal(h?.n, 42);
    assert.ok(Math.abs(h!.ms_per_step - (30 + 20 * 3 + 20 * 5) / 42) < 1e-9, String(h?.ms_per_step));
    // nothing to fold: no write
    await recordStepHistory(redis, prefix, 'v', []);
    assert.equal(await readStepHistory(redis, prefix, 'v'), null);
  });

  test('a stored value that is not a history is replaced, not folded into', async () => {
    const { redis } = priv;
    const prefix = freshPrefix();
    await redis.hset(`${prefix}:sched:history`, 'w', 'not json');
    await recordStepHistory(redis, prefix, 'w', [4]);
    assert.deepEqual(await readStepHistory(redis, prefix, 'w'), { ms_per_step: 4, n: 1 });
  });

  test('the sampler: one block per workload per interval', () => {
    const s = new StepHistorySampler(500);
    assert.equal(s.take('a', 1000), true);
    assert.equal(s.take('a', 1400), false);
    assert.equal(s.take('b', 1400), true, 'another workload has its own interval');
    assert.equal(s.take('a', 1500), true);
    assert.equal(s.take('a', 1999), false);
  });
});
