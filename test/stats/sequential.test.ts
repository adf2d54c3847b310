/**
 * The sequential rule's boundaries and decisions (orchestrator/stats/sequential.ts): the
 * O'Brien–Fleming-type alpha-spending boundaries match published ones (ldbounds / gsDesign sfLDOF,
 * five equal looks, two-sided 0.05), a single look is the fixed test, and — simulated under the
 * null with the looks' own decision rule — stopping at the first boundary crossing keeps the
 * type-I error at alpha, where crossing the fixed 1.96 at every look does not.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { mulberry32, standardNormal } from '../../jobs/seeded-random.ts';
import {
  decideLook,
  lookSchedule,
  obrienFlemingSpent,
  sequentialBoundaries,
} from '../../orchestrator/stats/sequential.ts';

/** Fraction of null z-paths (K equal looks) that cross `bounds` at some look. */
function crossingRate(bounds: readonly number[], runs: number, seed: number): number {
  const rand = mulberry32(seed);
  const K = bounds.length;
  let crossed = 0;
  for (let r = 0; r < runs; r++) {
    let s = 0;
    for (let k = 1; k <= K; k++) {
      s += standardNormal(rand) * Math.sqrt(1 / K);
      if (Math.abs(s / Math.sqrt(k / K)) >= (bounds[k - 1] as number)) {
        crossed++;
        break;
      }
    }
  }
  return crossed / runs;
}

describe('sequential boundaries', () => {
  test('five equal looks at 0.05: 4.877, 3.357, 2.680, 2.290, 2.031 (ldbounds, OBF type)', () => {
    const b = sequentialBoundaries([0.2, 0.4, 0.6, 0.8, 1], 0.05);
    for (const [i, want] of [4.8769, 3.3569, 2.6803, 2.2898, 2.031].entries())
      assert.ok(Math.abs((b[i] as number) - want) < 0.003, `look ${i + 1}: ${b[i]} vs ${want}`);
  });

  test('one look is the fixed two-sided test; the spending is alpha at the budget', () => {
    assert.ok(Math.abs((sequentialBoundaries([1], 0.05)[0] as number) - 1.96) < 0.001);
    assert.ok(Math.abs(obrienFlemingSpent(1, 0.05) - 0.05) < 1e-9);
    assert.ok(obrienFlemingSpent(0.2, 0.05) < 1e-5, 'almost nothing spent early');
  });

  test('under the null the boundaries keep type-I at alpha; the fixed 1.96 at every look does not', () => {
    const runs = 20_000;
    const seq = crossingRate(sequentialBoundaries([0.2, 0.4, 0.6, 0.8, 1], 0.05), runs, 7);
    const naive = crossingRate([1.96, 1.96, 1.96, 1.96, 1.96], runs, 7);
    // ± 3 simulation standard errors of 0.05 at 20 000 runs is ± 0.0046
    assert.ok(Math.abs(seq - 0.05) < 0.0046, `sequential type-I ${seq}`);
    assert.ok(naive > 0.12, `peeking at 1.96 every look: ${naive}`);
  });

  test('unequal, unplanned looks keep their boundaries decreasing and finite', () => {
    const b = sequentialBoundaries([0.15, 0.5, 0.55, 1], 0.05);
    for (let i = 1; i < b.length; i++) assert.ok((b[i] as number) < (b[i - 1] as number), b.join(', '));
    assert.throws(() => sequentialBoundaries([0.5, 0.4], 0.05), /must increase/);
  });
});

describe('a look', () => {
  const base = { pairs: 20, maxPairs: 40, critical: 2.5, last: false, better: 'lower' as const, min_effect: 0.01 };
  test('a repeated CI beyond the band decides faster or slower; inside it, equivalent; else go on', () => {
    assert.equal(decideLook({ ...base, mean: Math.log(0.9), se: 0.005 }).decision, 'faster');
    assert.equal(decideLook({ ...base, mean: Math.log(1.1), se: 0.005 }).decision, 'slower');
    assert.equal(decideLook({ ...base, mean: 0, se: 0.001 }).decision, 'equivalent');
    assert.equal(decideLook({ ...base, mean: Math.log(0.99), se: 0.01 }).decision, 'continue');
    assert.equal(decideLook({ ...base, mean: Math.log(0.99), se: 0.01, last: true }).decision, 'inconclusive');
    assert.equal(decideLook({ ...base, mean: null, se: null }).decision, 'continue');
  });
  test('a look without a finite boundary or repeated CI has none (null, never Infinity) and cannot decide', () => {
    const spendsNothing = decideLook({ ...base, mean: Math.log(0.5), se: 0.001, critical: Infinity });
    assert.deepEqual(
      [spendsNothing.boundary, spendsNothing.critical, spendsNothing.rci, spendsNothing.decision],
      [null, null, null, 'continue'],
    );
    // 2 pairs (df 1): the critical value is about 590 700 and exp(mean + c·se) overflows
    const two = decideLook({ ...base, pairs: 2, mean: Math.log(0.5), se: 0.01, critical: 590_697 });
    assert.ok(two.boundary !== null && Number.isFinite(two.boundary));
    assert.deepEqual([two.rci, two.decision], [null, 'continue']);
    const tooFew = decideLook({ ...base, pairs: 1, mean: null, se: null, critical: Infinity, last: true });
    assert.deepEqual([tooFew.boundary, tooFew.rci, tooFew.decision], [null, null, 'inconclusive']);
  });
  test('the look schedule spreads looks over the budget, the last at it', () => {
    assert.deepEqual(lookSchedule(6, 3), [2, 4, 6]);
    assert.deepEqual(lookSchedule(10, 4), [3, 5, 8, 10]);
    assert.deepEqual(lookSchedule(3, 3), [1, 2, 3]);
  });
});

describe('orch plan of a sequential spec', () => {
  test("its budget, its earliest stop and every look's boundary", async () => {
    const { sequentialPlanLines } = await import('../../orchestrator/report/sequential-plan.ts');
    const { planExperiment } = await import('../../jobs/plan.ts');
    const { SpecSchema } = await import('../../jobs/spec.ts');
    const spec = SpecSchema.parse({
      name: 's',
      design: 'ab',
      workload: { runtime: 'native', kind: 'chain' },
      toggles: ['graph'],
      arms: [{ name: 'e' }, { name: 'g', toggles: { graph: true } }],
      stopping: { rule: 'sequential', max_blocks: 10, looks: 5 },
    });
    const plan = planExperiment(spec, 'h');
    assert.equal(plan.blocks.length, 10);
    assert.deepEqual(sequentialPlanLines(plan), [
      'sequential: 10 block(s) at most, as few as 2; looks after 2, 4, 6, 8, 10 block(s), boundaries z 4.88, 3.36, 2.68, 2.29, 2.03 (two-sided alpha 0.05 over all looks)',
    ]);
    // twenty looks: the first spends no alpha, so it has no boundary and the earliest stop is the second
    const twenty = planExperiment(
      SpecSchema.parse({ ...spec, stopping: { rule: 'sequential', max_blocks: 20, looks: 20 } }),
      'h',
    );
    const [line] = sequentialPlanLines(twenty);
    assert.doesNotMatch(line!, /Infinity/);
    assert.match(
      line!,
      /as few as 2; .* boundaries z none, 6\.99, 5\.67, .*none: the look spends no alpha and cannot stop\)$/,
    );
  });
});
