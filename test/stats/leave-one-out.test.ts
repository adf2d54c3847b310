/**
 * The leave-one-out table beyond recovery of worths (simulation.test.ts): shares of
 * base − all_on and the interaction check, with toggles whose savings add up and with a planted
 * interaction (base slower than the sum of the worths says).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { blockSequences } from '../../jobs/plan.ts';
import { renderMarkdown } from '../../orchestrator/report/render-markdown.ts';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import type { Analysis } from '../../orchestrator/stats/types.ts';
import { type SimParams, seeded, simulateExperiment, simulateReps } from './simulate.ts';

const worths = { pdl: 4.6, kda: 2.7, proj: 0.5 };
const toggles = Object.keys(worths) as (keyof typeof worths)[];
const allOn = 40;
const sum = toggles.reduce((s, t) => s + worths[t], 0);

function loo(extraOnBase: number, scale = 1): SimParams {
  return {
    design: 'leave-one-out',
    control: 'all_on',
    toggles,
    arms: [
      { name: 'base', mu: allOn + sum * scale + extraOnBase, toggles: {} },
      { name: 'all_on', mu: allOn, toggles: {} },
      ...toggles.map((t) => ({ name: `no_${t}`, mu: allOn + worths[t] * scale, toggles: {} })),
    ],
    blocks: 4,
    reps: 3,
    sigma: 0.005,
    blockSd: 0.03,
    drift: 0,
    firstPosition: 0,
  };
}

function rate(p: SimParams, seed: number, runs: number, f: (a: Analysis) => boolean): number {
  const rng = seeded(seed);
  let n = 0;
  for (let i = 0; i < runs; i++) if (f(analyzeExperiment(simulateExperiment(p, rng, { min_effect: 0.01 })))) n++;
  return n / runs;
}

test('shares: worth / (base − all_on) per toggle, from the same paired differences', () => {
  const a = analyzeExperiment(simulateExperiment(loo(0), seeded(81), { min_effect: 0.01 }));
  const t = a.loo!;
  for (const r of t.rows) {
    const c = a.comparisons.find((x) => x.arm === r.arm)!;
    assert.equal(r.worth, c.absolute.mean);
    assert.equal(r.share, c.absolute.mean! / t.total!);
  }
  const shares = t.rows.map((r) => r.share!);
  const planted = toggles.map((k) => worths[k] / sum);
  for (const [i, s] of shares.entries())
    assert.ok(Math.abs(s - planted[i]!) < 0.05, `share ${s} vs planted ${planted[i]}`);
  assert.equal(t.share_withheld, null);
  assert.doesNotMatch(renderMarkdown(a), /No shares/);
});

test('shares withheld when base − all_on\'s CI includes zero: "—" and a footnote saying why', () => {
  // savings a thousandth of the planted ones: base and all_on differ by less than the noise
  const a = analyzeExperiment(simulateExperiment(loo(0, 0.001), seeded(85), { min_effect: 0.01 }));
  const t = a.loo!;
  const ci = a.comparisons.find((c) => c.arm === 'base' && c.reference === 'all_on')!.absolute.ci!;
  assert.ok(ci[0] <= 0 && ci[1] >= 0, `the planted difference was told from zero: ${ci}`);
  assert.deepEqual(
    t.rows.map((r) => r.share),
    toggles.map(() => null),
  );
  assert.ok(
    t.rows.every((r) => r.worth !== null),
    'the worths themselves are still printed',
  );
  assert.match(t.share_withheld ?? '', /^base − all_on's CI \(.+ to .+\) includes zero/);
  const md = renderMarkdown(a);
  const rows = md.split('\n').filter((l) => toggles.some((k) => l.startsWith(`| ${k} |`)));
  assert.equal(rows.length, toggles.length);
  for (const row of rows) assert.ok(row.trimEnd().endsWith('| — |'), row);
  assert.match(md, /\| share of base − all_on¹ \|/);
  assert.ok(md.includes(`¹ No shares: ${t.share_withheld}.`), md);
});

test('interaction line: both sides are printed beside the difference, even with a toggle all_on could not run', () => {
  const input = simulateExperiment(loo(1.5), seeded(86), { min_effect: 0.01 });
  // all_on ran without pdl (unsupported there): its worth is no number, the units are complete
  for (const r of input.reps) if (r.arm === 'all_on') r.unsupported = ['pdl'];
  const t = analyzeExperiment(input).loo!;
  assert.equal(t.rows.find((r) => r.toggle === 'pdl')!.worth, null);
  const m = /base − all_on = (\S+) vs Σ worths = (\S+) \(means over the same units\); difference (\S+) ±/.exec(
    t.message,
  );
  assert.ok(m, t.message);
  const [total, sumOfWorths, difference] = m.slice(1).map(Number);
  for (const x of [total, sumOfWorths, difference]) assert.ok(Number.isFinite(x), t.message);
  assert.ok(Math.abs(total! - sumOfWorths! - difference!) <= 1e-3 * Math.abs(total!), t.message);
});

test('interaction check: quiet when savings add up, flagged when base hides 1.5 ms more', () => {
  const additive = rate(loo(0), 82, 200, (a) => a.loo!.interaction_flagged);
  const planted = rate(loo(1.5), 83, 200, (a) => a.loo!.interaction_flagged && a.loo!.interaction.mean! > 0);
  console.log(
    `# LOO interaction flagged: ${(additive * 100).toFixed(1)} % additive, ${(planted * 100).toFixed(1)} % with +1.5 ms on base`,
  );
  assert.ok(additive <= 0.07, `flagged without interaction in ${additive}`);
  assert.ok(planted >= 0.9, `planted interaction found in ${planted}`);
  const a = analyzeExperiment(simulateExperiment(loo(1.5), seeded(84), { min_effect: 0.01 }));
  assert.match(a.loo!.message, /^the toggles interact: base − all_on = /);
});

test('interaction check: every rep of a block resized by reps_per_block is a unit, as the comparisons pair them', () => {
  // blocks of 2, 8 and 8 reps per arm (the first at `reps`, the later sized up): 18 pairs per arm
  const p = { ...loo(0), reps: 2, blocks: 3 };
  const input = simulateExperiment(p, seeded(87), { min_effect: 0.01 });
  const plan = {
    ...input.plan,
    blocks: blockSequences(
      input.plan.arms.map((a) => a.name),
      [2, 8, 8],
      'balanced',
      0,
    ),
  };
  const a = analyzeExperiment({ ...input, plan, reps: simulateReps(p, plan, seeded(88)) });
  const total = a.comparisons.find((c) => c.arm === 'base' && c.reference === 'all_on')!;
  assert.equal(total.pairs, 18);
  // the units were the first block's count per block, 3 × 2 = 6, while the table's total used all 18
  assert.equal(a.loo!.interaction.n, 18, a.loo!.message);
  assert.match(a.loo!.message, /, 18 units\)$/);
  // complete units: base − all_on over them is the total the table prints
  const m = /base − all_on = (\S+) vs/.exec(a.loo!.message)!;
  assert.equal(Number(m[1]), Number(Number(total.absolute.mean!.toPrecision(4))));
});
