/**
 * Order effects and drift are estimated, reported and flagged when planted — and rarely flagged
 * when not. Rates over seeded simulated experiments, through analyzeExperiment.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import type { Analysis } from '../../orchestrator/stats/types.ts';
import { type SimParams, seeded, simulateExperiment, twoArms } from './simulate.ts';

const quiet = twoArms(39 / 40, { sigma: 0.005 });

function runs(p: SimParams, seed: number, n: number, f: (a: Analysis) => number): number {
  const rng = seeded(seed);
  let s = 0;
  for (let i = 0; i < n; i++) s += f(analyzeExperiment(simulateExperiment(p, rng, { min_effect: 0.01 })));
  return s / n;
}

test('order effects: a 3 % cold first position is flagged; none is rarely flagged', () => {
  const none = runs(quiet, 41, 300, (a) => Number(a.order!.flagged));
  const planted = { ...quiet, firstPosition: 0.03 };
  const found = runs(planted, 42, 300, (a) => {
    const largest = a.order!.by_position.reduce((m, p) => (Math.abs(p.effect!) > Math.abs(m.effect!) ? p : m));
    return Number(a.order!.flagged && largest.position === 0);
  });
  console.log(
    `# order effects flagged: ${(none * 100).toFixed(1)} % without, ${(found * 100).toFixed(1)} % with a planted 3 % first position`,
  );
  assert.ok(none <= 0.1, `flagged without an order effect in ${none}`);
  assert.ok(found >= 0.9, `planted order effect found in ${found}`);
});

test('order effects: an arm-specific cold start shows as an arm × position interaction', () => {
  // Eight blocks: two reps per arm × position cell, so the interaction is testable.
  const eight = { ...quiet, blocks: 8 };
  const planted = { ...eight, firstPositionByArm: { B: 0.04 } };
  const significant = (a: Analysis) => (a.order!.interaction_test.p ?? 1) < 0.05;
  const found = runs(planted, 43, 300, (a) => Number(significant(a) && a.order!.flagged));
  const none = runs(eight, 44, 300, (a) => Number(significant(a)));
  console.log(
    `# arm × position significant: ${(none * 100).toFixed(1)} % without, ${(found * 100).toFixed(1)} % with a planted 4 % B-only cold start`,
  );
  assert.ok(found >= 0.9, `interaction found in ${found}`);
  assert.ok(none <= 0.08, `interaction flagged without one in ${none}`);
  const a = analyzeExperiment(simulateExperiment(planted, seeded(45), { min_effect: 0.01 }));
  assert.match(a.order!.message, /^order effects flagged: /);
  const few = analyzeExperiment(simulateExperiment(quiet, seeded(45), { min_effect: 0.01 }));
  assert.equal(few.order!.interaction_test.p, null);
  assert.match(few.order!.message, /arm × position not testable \(fewer than two reps per arm × position cell/);
});

test('drift: a planted trend over run position is flagged per arm; none is flagged at about alpha', () => {
  const none = runs(quiet, 46, 300, (a) => a.drift.filter((d) => d.flagged).length / a.drift.length);
  const drifting = { ...quiet, drift: 0.004 };
  const found = runs(
    drifting,
    47,
    300,
    (a) => a.drift.filter((d) => d.flagged && d.slope! > 0).length / a.drift.length,
  );
  const slope = runs(drifting, 48, 300, (a) => a.drift.reduce((s, d) => s + Math.log1p(d.slope!), 0) / a.drift.length);
  console.log(
    `# drift flagged per arm: ${(none * 100).toFixed(1)} % without, ${(found * 100).toFixed(1)} % with 0.4 %/position; mean slope ${(slope * 100).toFixed(3)} %`,
  );
  assert.ok(none <= 0.08, `drift flagged without drift in ${none}`);
  assert.ok(found >= 0.9, `planted drift flagged in ${found}`);
  assert.ok(
    Math.abs(slope - drifting.drift) < 0.1 * drifting.drift,
    `mean slope ${slope} vs planted ${drifting.drift}`,
  );
});
