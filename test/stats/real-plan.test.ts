/**
 * The seam with the planner: a real spec (configs/leave-one-out.yaml) planned by the real
 * planExperiment feeds analyzeExperiment as it is (a Plan is a PlanLike), with reps simulated
 * from toggle worths that add up in ms.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planExperiment } from '../../jobs/plan.ts';
import { renderMarkdown } from '../../orchestrator/report/render-markdown.ts';
import { loadSpec } from '../../orchestrator/spec/load-spec.ts';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import type { AnalysisInput } from '../../orchestrator/stats/types.ts';
import { type SimParams, seeded, simulateReps } from './simulate.ts';

test('a planned leave-one-out spec analyzes end to end: one worth row per toggle, A/A gate applied', () => {
  const { spec, hash } = loadSpec('configs/leave-one-out.yaml');
  const plan = planExperiment(spec, hash);
  const worth = Object.fromEntries(spec.toggles.map((t, i) => [t, 0.8 + i]));
  const mu = (toggles: Record<string, boolean | string>) =>
    30 - spec.toggles.reduce((s, t) => s + (toggles[t] === true ? worth[t]! : 0), 0);
  const sim: SimParams = {
    design: plan.design,
    control: plan.control,
    arms: plan.arms.map((a) => ({ ...a, mu: mu(a.toggles) })),
    blocks: plan.blocks.length,
    reps: plan.reps,
    sigma: 0.003,
    blockSd: 0.03,
    drift: 0,
    firstPosition: 0,
  };
  const input: AnalysisInput = {
    plan,
    reps: simulateReps(sim, plan, seeded(71)),
    failed: [],
    gates: [],
    metric: { name: spec.metric.name, better: spec.metric.better, statistic: spec.metric.statistic },
    min_effect: spec.metric.min_effect,
    alpha: 0.05,
  };
  const a = analyzeExperiment(input);
  assert.deepEqual(
    a.loo!.rows.map((r) => r.toggle),
    spec.toggles,
  );
  assert.equal(a.aa!.arm, `${plan.control}_aa`);
  assert.equal(a.gates.find((g) => g.name === 'aa')!.pass, true);
  assert.equal(a.verdict, 'faster');
  assert.equal(a.issues.length, 0);
  for (const r of a.loo!.rows) assert.equal(r.df, plan.blocks.length * plan.reps - 1);
  assert.match(renderMarkdown(a), /^# sim: FASTER/);
});
