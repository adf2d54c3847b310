/**
 * Minimum detectable effect before a run (pairs needed) and after it (what an inconclusive
 * verdict rules out), checked for consistency and against simulated power.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import { MDE_POWER } from '../../orchestrator/stats/compare.ts';
import { pct } from '../../orchestrator/stats/format-number.ts';
import {
  detectableEffect,
  noiseFromAnalysis,
  noiseFromCv,
  repsPerBlock,
  requiredPairs,
} from '../../orchestrator/stats/mde.ts';
import { seeded, simulateExperiment, twoArms } from './simulate.ts';

test('requiredPairs is the smallest n whose detectable effect reaches the asked one', () => {
  for (const [effect, cv, m] of [
    [-0.02, 0.015, 0.005],
    [0.05, 0.03, 0.01],
    [-0.01, 0.002, 0],
  ] as const) {
    const noise = noiseFromCv(cv);
    const n = requiredPairs({ effect, noise, alpha: 0.05, power: 0.9, min_effect: m })!;
    assert.ok(n >= 2);
    // detectableEffect is quoted upward from the band's edge, in log distance like requiredPairs.
    const reach = (k: number) => Math.log1p(detectableEffect(k, noise, 0.05, 0.9, m)!) - Math.log1p(m);
    const dist = effect < 0 ? Math.log1p(-m) - Math.log1p(effect) : Math.log1p(effect) - Math.log1p(m);
    assert.ok(reach(n) <= dist + 1e-12, `n=${n} reaches ${reach(n)} < ${dist}`);
    if (n > 2) assert.ok(reach(n - 1) > dist, `n−1=${n - 1} already reaches ${dist}`);
  }
  assert.equal(
    requiredPairs({ effect: -0.004, noise: 0.01, alpha: 0.05, power: 0.9, min_effect: 0.005 }),
    null,
    'inside the band',
  );
  const lo = requiredPairs({ effect: -0.02, noise: 0.01, alpha: 0.05, power: 0.9, min_effect: 0 })!;
  const hi = requiredPairs({ effect: -0.02, noise: 0.02, alpha: 0.05, power: 0.9, min_effect: 0 })!;
  assert.ok(hi > lo, 'more noise needs more pairs');
  assert.equal(repsPerBlock(23, 4), 6);
  assert.equal(repsPerBlock(1, 4), 2);
});

test('after a run: an inconclusive verdict states the largest change its CI leaves open', () => {
  const p = twoArms(1, { sigma: 0.004 });
  const a = analyzeExperiment(simulateExperiment(p, seeded(51), { min_effect: 0.01 }));
  const c = a.primary!;
  assert.equal(c.verdict, 'inconclusive');
  const bound = Math.max(Math.abs(c.relative.ci![0]), Math.abs(c.relative.ci![1]));
  assert.equal(c.bound, bound);
  assert.ok(c.statement.startsWith(`no change larger than ${pct(bound)} at 95 %`), c.statement);
  assert.equal(c.mde, detectableEffect(c.pairs, c.log_ratio.sd!, 0.05, MDE_POWER, 0.01));
  assert.ok(c.reasons.includes(`this comparison could detect a change of ${pct(c.mde)} with 80 % power`));
});

test('an effect of the size detectableEffect quotes is found with about the quoted 80 % power', () => {
  const sigma = 0.01;
  const blocks = 4;
  const reps = 3;
  const m = 0.005;
  const effect = detectableEffect(blocks * reps, noiseFromCv(sigma), 0.05, MDE_POWER, m)!;
  const p = twoArms(1 + effect, { blocks, reps, sigma });
  const rng = seeded(52);
  let found = 0;
  const runs = 600;
  for (let i = 0; i < runs; i++)
    if (analyzeExperiment(simulateExperiment(p, rng, { min_effect: m })).verdict === 'slower') found++;
  console.log(
    `# power at the quoted MDE ${pct(effect)} (${blocks * reps} pairs): ${((found / runs) * 100).toFixed(1)} %`,
  );
  assert.ok(found / runs >= 0.74 && found / runs <= 0.9, `power ${found / runs}`);
});

test('planning from a prior A/A: its noise prescribes reps that find a planted 2 % effect', () => {
  const pilot = analyzeExperiment(
    simulateExperiment(
      {
        ...twoArms(1, { blocks: 8, reps: 5 }),
        arms: [
          { name: 'A', mu: 40, toggles: {} },
          { name: 'A_aa', mu: 40, toggles: {}, aa_of: 'A' },
        ],
      },
      seeded(53),
    ),
  );
  const noise = noiseFromAnalysis(pilot)!;
  assert.equal(noise, pilot.aa!.log_ratio.sd);
  const pairs = requiredPairs({ effect: -0.02, noise, alpha: 0.05, power: 0.9, min_effect: 0.005 })!;
  const p = twoArms(0.98, { reps: repsPerBlock(pairs, 4) });
  const rng = seeded(54);
  let found = 0;
  for (let i = 0; i < 300; i++)
    if (analyzeExperiment(simulateExperiment(p, rng, { min_effect: 0.005 })).verdict === 'faster') found++;
  console.log(
    `# from a 40-pair A/A pilot (noise ${pct(noise)}): ${pairs} pairs, power ${((found / 300) * 100).toFixed(1)} %`,
  );
  assert.ok(found / 300 >= 0.85, `power ${found / 300}`);
});

test('better: higher flips which side is faster', () => {
  const lower = analyzeExperiment(simulateExperiment(twoArms(0.97), seeded(55), { min_effect: 0.01 }));
  const higher = analyzeExperiment(
    simulateExperiment(twoArms(0.97), seeded(55), {
      min_effect: 0.01,
      metric: { name: 'tok_per_s', better: 'higher', statistic: 'median' },
    }),
  );
  assert.equal(lower.verdict, 'faster');
  assert.equal(higher.verdict, 'slower');
  assert.deepEqual(higher.primary!.relative, lower.primary!.relative);
});
