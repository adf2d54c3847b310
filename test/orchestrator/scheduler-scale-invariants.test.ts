// The scheduler at CI size (bench/scheduler-scale.ts is the full size, with the speed targets):
// 32 cards on 4 stand-in hosts, a seeded mix of 1/2/4/8-rank blocks through the real Scheduler,
// submit, leases and commit. Asserted are invariants only, never speed: every block ends done,
// no card is held by two gangs at once, and no block waits at the head of the queue longer than
// the backfill guarantee allows (with a generous slack for the scheduler's own pass latency on a
// loaded machine).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runScale } from '../../bench/lib/scale-run.ts';

test('at scale: all done, no card in two gangs at once, no block starved past the backfill bound', async () => {
  const r = await runScale({
    hosts: 4,
    cardsPerHost: 8,
    experiments: 8,
    blocksPerExperiment: 6,
    reps: 2,
    runMs: [20, 120],
    seed: 7,
    slackMs: 10_000,
    timeoutMs: 180_000,
  });
  assert.equal(r.notDone, 0);
  assert.equal(r.metrics.blocks, 48);
  assert.deepEqual(r.metrics.overlaps, []);
  assert.deepEqual(r.metrics.starved, []);
  assert.equal(r.metrics.retried, 0);
});
