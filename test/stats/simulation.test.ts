/**
 * The statistics' error rates, measured through the real analyzeExperiment on seeded simulated
 * experiments (block effects, drift, a cold first position, rep and step noise; simulate.ts).
 * Every truth is computed from the planted means; the rates are what the code does, not what
 * the formulas promise.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import { noiseFromCv, repsPerBlock, requiredPairs } from '../../orchestrator/stats/mde.ts';
import { type SimParams, seeded, simulateExperiment, twoArms } from './simulate.ts';

const nuisance = { blockSd: 0.05, drift: 0.0005, firstPosition: 0.002 };

function rate(runs: number, seed: number, hit: (rng: () => number) => boolean): number {
  const rng = seeded(seed);
  let hits = 0;
  for (let i = 0; i < runs; i++) if (hit(rng)) hits++;
  return hits / runs;
}

const AA_FPR: SimParams = {
  ...twoArms(1, { reps: 2, ...nuisance }),
  arms: [
    { name: 'A', mu: 40, toggles: {} },
    { name: 'A_aa', mu: 40, toggles: {}, aa_of: 'A' },
  ],
};

test('A/A false-positive rate at alpha 0.05 lies in [3 %, 7 %] over 2000 simulated experiments', () => {
  const fpr = rate(2000, 101, (rng) => {
    const a = analyzeExperiment(simulateExperiment(AA_FPR, rng));
    assert.notEqual(a.aa, null);
    return a.aa!.verdict !== 'inconclusive';
  });
  console.log(`# A/A false-positive rate: ${(fpr * 100).toFixed(2)} % (2000 experiments, 8 pairs each)`);
  assert.ok(fpr >= 0.03 && fpr <= 0.07, `A/A false-positive rate ${fpr}`);
});

test('95 % CI of a planted −3 % difference covers the truth in [93 %, 97 %] of 2000 experiments', () => {
  const p = twoArms(0.97, { reps: 2, ...nuisance });
  const truth = p.arms[1]!.mu / p.arms[0]!.mu - 1;
  const coverage = rate(2000, 202, (rng) => {
    const ci = analyzeExperiment(simulateExperiment(p, rng)).primary!.relative.ci!;
    return ci[0] <= truth && truth <= ci[1];
  });
  console.log(`# CI coverage of a planted ${(truth * 100).toFixed(1)} % difference: ${(coverage * 100).toFixed(2)} %`);
  assert.ok(coverage >= 0.93 && coverage <= 0.97, `coverage ${coverage}`);
});

test('a planted 2 % speedup is found with power >= 0.9 at the reps the MDE function prescribes', () => {
  const sigma = 0.015;
  const min_effect = 0.005;
  const blocks = 4;
  const effect = -0.02;
  const pairs = requiredPairs({ effect, noise: noiseFromCv(sigma), alpha: 0.05, power: 0.9, min_effect });
  assert.notEqual(pairs, null);
  const reps = repsPerBlock(pairs!, blocks);
  const p = twoArms(1 + effect, { blocks, reps, sigma, ...nuisance });
  const power = rate(
    1000,
    303,
    (rng) => analyzeExperiment(simulateExperiment(p, rng, { min_effect })).verdict === 'faster',
  );
  console.log(
    `# power for a 2 % effect at ${pairs} pairs (${blocks} blocks × ${reps} reps): ${(power * 100).toFixed(1)} %`,
  );
  assert.ok(power >= 0.9, `power ${power} at ${reps} reps per block`);
});

test('leave-one-out recovers planted per-toggle worths within 2 se in >= 90 % (and <= 99 %) of cases', () => {
  const base = 48;
  const worths = { pdl: 4.6, kda: 2.7, proj: 0.5 };
  const toggles = Object.keys(worths) as (keyof typeof worths)[];
  const allOn = base - toggles.reduce((s, t) => s + worths[t], 0);
  const p: SimParams = {
    design: 'leave-one-out',
    control: 'all_on',
    toggles,
    arms: [
      { name: 'base', mu: base, toggles: {} },
      { name: 'all_on', mu: allOn, toggles: {} },
      ...toggles.map((t) => ({ name: `no_${t}`, mu: allOn + worths[t], toggles: {} })),
    ],
    blocks: 4,
    reps: 4,
    sigma: 0.01,
    ...nuisance,
  };
  const rng = seeded(404);
  let within = 0;
  let total = 0;
  for (let run = 0; run < 300; run++) {
    const a = analyzeExperiment(simulateExperiment(p, rng, { min_effect: 0.01 }));
    for (const row of a.loo!.rows) {
      const truth = worths[row.toggle as keyof typeof worths] / allOn;
      total++;
      if (Math.abs(row.worth_rel! - truth) <= 2 * row.worth_rel_se!) within++;
    }
  }
  const share = within / total;
  console.log(`# LOO worths within 2 se: ${(share * 100).toFixed(1)} % of ${total} (run, toggle)`);
  assert.ok(share >= 0.9, `LOO recovery ${share}`);
  // The other side: an inflated se (pooled instead of paired) would put every worth within 2 se.
  assert.ok(share <= 0.99, `LOO se too wide: ${share} within 2 se`);
});
