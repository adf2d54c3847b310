/**
 * The leave-one-out table beyond recovery of worths (simulation.test.ts): shares of
 * base − all_on and the interaction check, with toggles whose savings add up and with a planted
 * interaction (base slower than the sum of the worths says).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import type { Analysis } from '../../orchestrator/stats/types.ts';
import { seeded, simulateExperiment, type SimParams } from './simulate.ts';

const worths = { pdl: 4.6, kda: 2.7, proj: 0.5 };
const toggles = Object.keys(worths) as (keyof typeof worths)[];
const allOn = 40;
const sum = toggles.reduce((s, t) => s + worths[t], 0);

function loo(extraOnBase: number): SimParams {
  return {
    design: 'leave-one-out',
    control: 'all_on',
    toggles,
    arms: [
      { name: 'base', mu: allOn + sum + extraOnBase, toggles: {} },
      { name: 'all_on', mu: allOn, toggles: {} },
      ...toggles.map((t) => ({ name: `no_${t}`, mu: allOn + worths[t], toggles: {} })),
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
  shares.forEach((s, i) => assert.ok(Math.abs(s - planted[i]!) < 0.05, `share ${s} vs planted ${planted[i]}`));
});

test('interaction check: quiet when savings add up, flagged when base hides 1.5 ms more', () => {
  const additive = rate(loo(0), 82, 200, (a) => a.loo!.interaction_flagged);
  const planted = rate(loo(1.5), 83, 200, (a) => a.loo!.interaction_flagged && a.loo!.interaction.mean! > 0);
  console.log(`# LOO interaction flagged: ${(additive * 100).toFixed(1)} % additive, ${(planted * 100).toFixed(1)} % with +1.5 ms on base`);
  assert.ok(additive <= 0.07, `flagged without interaction in ${additive}`);
  assert.ok(planted >= 0.9, `planted interaction found in ${planted}`);
  const a = analyzeExperiment(simulateExperiment(loo(1.5), seeded(84), { min_effect: 0.01 }));
  assert.match(a.loo!.message, /^the toggles interact: base − all_on = /);
});
