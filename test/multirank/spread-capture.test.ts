/**
 * A spread gang's capture blocker is the gang's only when every rank of every part answered
 * CAPTURE_FAILED (worker/spread-part.ts captureFailedEverywhere, through store/gang-staging.ts on
 * a real redis-server): two parts of a 2-rank gang, one rank each. Both ranks' captures failed:
 * each part finds the other's and blocks the arm. Only host a's: a finds rank 1 missing once
 * the grace has passed, and the gang fails (worker/gang-ranks.ts gangAnswers) instead of its
 * parts running different reps.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GangStaging } from '../../store/gang-staging.ts';
import type { ResultStore } from '../../store/result-store.ts';
import { SpreadPart } from '../../worker/spread-part.ts';
import { blockJob } from '../utils/block-jobs.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';

describe('a spread gang agrees on a capture blocker through its staging', () => {
  const r = privateRedis();

  function parts(attempt: number) {
    const staging = new GangStaging(r.redis, { prefix: freshPrefix() });
    const part = (host: string, first_rank: number) =>
      new SpreadPart(
        blockJob({
          experiment: 'sc',
          block: 0,
          attempt,
          epoch: 1,
          host,
          cards: [`cpu:0@${host}`],
          world: 2,
          first_rank,
        }),
        { host, advertise: '127.0.0.1', waitMs: 10_000, pollMs: 10 },
        staging,
        {} as ResultStore,
        (p) => p,
      );
    return { staging, a: part('a', 0), b: part('b', 1) };
  }

  test("every rank's capture failed: both parts find the whole gang, and forget() removes the marks", async () => {
    const { staging, a, b } = parts(1);
    const t0 = Date.now();
    const [fromA, fromB] = await Promise.all([
      a.captureFailedEverywhere('b0-a1-rep0', [0], 5000),
      new Promise((r) => setTimeout(r, 100)).then(() => b.captureFailedEverywhere('b0-a1-rep0', [1], 5000)),
    ]);
    assert.deepEqual([fromA, fromB], [[], []]);
    assert.ok(Date.now() - t0 < 2000, 'neither waited out its grace');
    const key = staging.keys.captureFailed('sc', 0, 1);
    assert.deepEqual(await r.redis.hgetall(key), { 'b0-a1-rep0/0': 'a', 'b0-a1-rep0/1': 'b' });
    await a.forget();
    assert.equal(await r.redis.exists(key), 0);
  });

  test("only host a's rank failed its capture: a finds rank 1 missing once its grace passed", async () => {
    const { a } = parts(2);
    const t0 = Date.now();
    assert.deepEqual(await a.captureFailedEverywhere('b0-a2-rep0', [0], 300), [1]);
    assert.ok(Date.now() - t0 >= 300);
    // another op's marks are not this op's
    assert.deepEqual(await a.captureFailedEverywhere('b0-a2-rep1', [0], 50), [1]);
  });
});
