/**
 * A resident rank's launch counts against its request (worker/command/resident-answer.ts
 * `misfit`): one count per counted step, the warm-up's when the rank says `counted: "warmup"`
 * (ranklib/PROTOCOL.md "Launch counts and clocks"), the timed steps' otherwise or when absent (a
 * rank library from before pause); counts of a length that fits neither are a protocol fault.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LaunchCounts, OrchRankRep } from '../../jobs/orch-rank-protocol.ts';
import { misfit } from '../../worker/command/resident-answer.ts';

const job = { warmup: 2, steps: 3, gates: { identity: null, aa: false } };
const hash = { x: '0123456789abcdef' };

function rep(launches: LaunchCounts, warmup = job.warmup): OrchRankRep {
  return {
    v: 1,
    type: 'rep',
    id: 'r0',
    arm: 'A',
    mode: 'eager',
    graph: null,
    warmup_ms: new Array(warmup).fill(0.5),
    step_ms: [1, 1, 1],
    hashes: [hash, hash, hash],
    launches,
    t_start_ns: 0,
    t_end_ns: 1,
    final: true,
  };
}
const counts = (n: number, counted?: 'warmup' | 'timed'): LaunchCounts => ({
  source: 'cupti',
  ...(counted === undefined ? {} : { counted }),
  kernels: new Array(n).fill(7),
  captured: 0,
  graphs: new Array(n).fill(0),
  memcpy: new Array(n).fill(0),
  memset: new Array(n).fill(0),
  syncs: new Array(n).fill(0),
});

test('counts of the warm-up steps fit a request of 2 warm-up steps; of the timed steps, 3', () => {
  assert.equal(misfit(rep(counts(2, 'warmup')), job), null);
  assert.equal(misfit(rep(counts(3, 'timed')), job), null);
  assert.equal(misfit(rep(counts(3)), job), null, 'absent: the timed steps, as a rank library before pause');
});

test('counts of the wrong length for what they say they count are a protocol fault, naming both', () => {
  assert.equal(
    misfit(rep(counts(3, 'warmup')), job),
    'rep r0 has 3 launch counts (kernels) for 2 warm-up steps (counted: warmup)',
  );
  assert.equal(misfit(rep(counts(2)), job), 'rep r0 has 2 launch counts (kernels) for 3 timed steps (counted: timed)');
  assert.equal(
    misfit(rep(counts(0, 'warmup'), 0), { ...job, warmup: 0 }),
    'rep r0 says its launch counts are of its warm-up steps, but it ran none',
  );
});
