/**
 * The reference one bad rep cannot move (orchestrator/stats/reference-arm.ts): with a planted
 * slow rep in the control, the leave-one-out comparisons stay where the clean run put them, the
 * rep is set aside with its reason, and the report says which reference each comparison used. The
 * control alone (the reference before: the same analysis without the A/A twin) moves with it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderMarkdown } from '../../orchestrator/report/render-markdown.ts';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import type { Analysis, AnalysisInput } from '../../orchestrator/stats/types.ts';
import { leaveOneOutProgram, plantRep, type SimParams, seeded, simulateExperiment } from './simulate.ts';

const worths = { pdl: 4.6, kda: 2.7, proj: 1.2, fuse: 0.8, pin: 0.4 };
const bad = { block: 2, arm: 'all_on', rep: 1 };
const SLOW = 1.3;

function withoutTwin(input: AnalysisInput): AnalysisInput {
  const blocks = input.plan.blocks.map((b) => ({ ...b, sequence: b.sequence.filter((a) => a !== 'all_on_aa') }));
  return {
    ...input,
    plan: { ...input.plan, arms: input.plan.arms.filter((a) => a.name !== 'all_on_aa'), blocks },
    reps: input.reps.filter((r) => r.arm !== 'all_on_aa'),
  };
}

/** Per leave-one-out comparison, how far the planted rep moved its mean log ratio, in the clean run's se. */
function moves(clean: Analysis, planted: Analysis): number[] {
  return clean.comparisons.map((c) => {
    const p = planted.comparisons.find((x) => x.arm === c.arm)!;
    return Math.abs(p.log_ratio.mean! - c.log_ratio.mean!) / c.log_ratio.se!;
  });
}

const input = (p: SimParams, seed: number) => simulateExperiment(p, seeded(seed), { min_effect: 0.01 });

test('a slow rep planted in the control is set aside with its reason and moves no comparison by half a standard error; the control alone moves them all', () => {
  const clean = input(leaveOneOutProgram(worths, true), 29);
  const planted = plantRep(clean, bad, SLOW);
  const now = analyzeExperiment(planted);
  assert.equal(now.reference?.kind, 'pooled');
  const aside = now.reference!.set_aside.find((s) => s.block === bad.block && s.arm === bad.arm && s.rep === bad.rep);
  assert.ok(aside, `the planted rep is not set aside: ${JSON.stringify(now.reference)}`);
  assert.match(aside.reason, /robust sds/);
  const kept = moves(analyzeExperiment(clean), now);
  assert.ok(
    kept.every((m) => m < 0.5),
    `pooled reference moved by ${kept.map((m) => m.toFixed(2)).join(', ')} se`,
  );
  const before = moves(analyzeExperiment(withoutTwin(clean)), analyzeExperiment(withoutTwin(planted)));
  assert.ok(
    before.every((m) => m >= 0.5),
    `the control alone moved by ${before.map((m) => m.toFixed(2)).join(', ')} se`,
  );
});

test('leave-one-out CIs cover their planted worths with a slow control rep under heavy-tailed noise', () => {
  const runs = 60;
  const place = seeded(7);
  let covered = 0;
  for (let r = 0; r < runs; r++) {
    const p = leaveOneOutProgram(worths, true, { noise: 't3' });
    const at = { block: Math.floor(place() * p.blocks), arm: 'all_on', rep: Math.floor(place() * p.reps) };
    const a = analyzeExperiment(plantRep(input(p, 900 + r), at, SLOW));
    for (const [t, w] of Object.entries(worths)) {
      const ci = a.comparisons.find((c) => c.arm === `no_${t}`)!.relative.ci!;
      if (ci[0] <= w / 40 && w / 40 <= ci[1]) covered++;
    }
  }
  const rate = covered / (runs * Object.keys(worths).length);
  // nominal 95 %, less two simulation standard errors of this many CIs
  const floor = 0.95 - 2 * Math.sqrt((0.95 * 0.05) / (runs * Object.keys(worths).length));
  assert.ok(rate >= floor, `coverage ${rate} under ${floor}`);
});

test('without an A/A twin, or when the A/A gate fails, the reference is the control alone and says why', () => {
  const alone = analyzeExperiment(input(leaveOneOutProgram(worths, false), 31));
  assert.equal(alone.reference?.kind, 'control');
  assert.match(alone.reference!.why, /no A\/A twin/);
  const p = leaveOneOutProgram(worths, true);
  const twinOff: SimParams = { ...p, arms: p.arms.map((a) => (a.name === 'all_on_aa' ? { ...a, mu: a.mu * 1.1 } : a)) };
  const failed = analyzeExperiment(input(twinOff, 32));
  assert.equal(failed.gates.find((g) => g.name === 'aa')?.pass, false);
  assert.equal(failed.reference?.kind, 'control');
  assert.match(failed.reference!.why, /A\/A gate failed/);
});

test('the report names the reference of each comparison and every rep set aside', () => {
  const a = analyzeExperiment(plantRep(input(leaveOneOutProgram(worths, true), 29), bad, SLOW));
  const md = renderMarkdown(a);
  assert.match(md, /Reference of every comparison with all_on: all_on pooled with its A\/A twin all_on_aa/);
  assert.match(md, new RegExp(`set aside: all_on block ${bad.block} rep ${bad.rep} `));
  assert.match(md, /\| no_pdl \| all_on \| all_on \+ all_on_aa pooled \|/);
  assert.match(md, /\| all_on_aa \| all_on \| all_on \(raw reps\) \|/);
});
