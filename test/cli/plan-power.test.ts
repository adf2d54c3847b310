/**
 * `orch plan --power` through the real CLI, from a simulated prior run written as a results
 * directory with planted noise (within-block and between-block) and planted times: the power it
 * states for a design matches the detection rate of seeded simulations of that design through
 * the real analysis, its wall time is the planted times', and bad input is a clear exit 2.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { PowerPlan } from '../../orchestrator/report/power-plan.ts';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import { writeSimulatedResultsDir } from '../stats/sim-results-dir.ts';
import { type SimParams, seeded, simulateExperiment, twoArms } from '../stats/simulate.ts';
import { runOrch, STACK_FRAME } from './run-orch.ts';

const MIN_EFFECT = 0.005;
const WARMUP = 1;
const STEPS = 3;

const SPEC = `name: power-ab
design: ab
workload:
  runtime: native
  backend: auto
  kind: chain
  params: { kernels: 4 }
  warmup: ${WARMUP}
  steps: ${STEPS}
toggles: [graph]
arms:
  - { name: eager, toggles: {} }
  - { name: graph, toggles: { graph: true } }
reps: 3
blocks: { count: 2, ranks: 1 }
gates: { identity: false }
metric: { name: ms_per_step, better: lower, min_effect: ${MIN_EFFECT} }
`;

/** The planted noise of the prior run: rep-to-rep and arm × block, log sd. */
const PRIOR: Partial<SimParams> = {
  blocks: 10,
  reps: 12,
  sigma: 0.01,
  blockArmSd: 0.004,
  blockSd: 0.05,
  steps: STEPS,
  stepSigma: 0,
};
const STARTUP_MS = 2500;

function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'orch-plan-power-'));
  const spec = join(dir, 'spec.yaml');
  writeFileSync(spec, SPEC);
  const prior = join(dir, 'results', 'sim-prior');
  const input = simulateExperiment(twoArms(1, PRIOR), seeded(7), { min_effect: MIN_EFFECT });
  writeSimulatedResultsDir(prior, input, { startup_ms: STARTUP_MS, warmup: WARMUP });
  const steps = input.reps.flatMap((r) => r.step_ms);
  return { dir, spec, prior, meanStep: steps.reduce((s, x) => s + x, 0) / steps.length };
}

/** Share of seeded simulated runs of this design, at this noise, that the real analysis calls faster. */
function detectionRate(
  effect: number,
  reps: number,
  blocks: number,
  noise: { within: number; between: number },
  runs: number,
  seed: number,
): number {
  const p = twoArms(1 + effect, {
    blocks,
    reps,
    sigma: Math.sqrt(noise.within / 2),
    blockArmSd: Math.sqrt(noise.between / 2),
    blockSd: 0.05,
    stepSigma: 0,
  });
  const rng = seeded(seed);
  let found = 0;
  for (let i = 0; i < runs; i++)
    if (analyzeExperiment(simulateExperiment(p, rng, { min_effect: MIN_EFFECT })).verdict === 'faster') found++;
  return found / runs;
}

describe('orch plan --power', () => {
  const s = setup();

  test('the power it states is the detection rate of the analysis on simulated runs; wall time from the prior run', () => {
    const r = runOrch(['plan', '--power', s.spec, '--noise-from', s.prior, '--effect', '1.5%,3%', '--json']);
    assert.equal(r.status, 0, r.stderr);
    const p = JSON.parse(r.stdout) as PowerPlan;
    const n = p.prior.noise;
    // The estimates of the planted noise (10 blocks × 12 pairs): generous bounds.
    const within = Math.SQRT2 * PRIOR.sigma!;
    const between = Math.SQRT2 * PRIOR.blockArmSd!;
    assert.ok(
      n.within_sd > 0.8 * within && n.within_sd < 1.25 * within,
      `within sd ${n.within_sd} vs planted ${within}`,
    );
    assert.ok(n.between !== null && n.between_sd < 3 * between, `between sd ${n.between_sd} vs planted ${between}`);
    assert.ok(
      Math.abs(p.prior.timing.step_ms! - s.meanStep) < 1e-9 * s.meanStep + 1e-6,
      `${p.prior.timing.step_ms} vs ${s.meanStep}`,
    );
    assert.ok(Math.abs(p.prior.timing.startup_ms! - STARTUP_MS) <= 2, `start-up ${p.prior.timing.startup_ms}`);
    assert.equal(p.rows.length, 2);
    let seed = 100;
    for (const row of p.rows) {
      assert.ok(row.effect < 0, 'lower is better: the effect planned for is a decrease');
      assert.ok(row.design !== null, row.note ?? '');
      assert.ok(row.design.power >= p.target_power);
      const planted = row.design.blocks * (STARTUP_MS + row.design.reps * p.arms * (WARMUP + STEPS) * s.meanStep);
      assert.ok(Math.abs(row.design.wall_ms - planted) < 0.01 * planted, `wall ${row.design.wall_ms} vs ${planted}`);
      for (const d of [row.design, row.as_written]) {
        const rate = detectionRate(
          row.effect,
          d.reps,
          d.blocks,
          { within: n.within, between: n.between ?? 0 },
          300,
          seed++,
        );
        console.log(
          `effect ${(row.effect * 100).toFixed(1)} %: ${d.reps} reps × ${d.blocks} blocks: stated power ${d.power.toFixed(3)}, simulated ${rate.toFixed(3)}`,
        );
        assert.ok(Math.abs(rate - d.power) < 0.1, `stated ${d.power}, simulated ${rate} (${d.reps} × ${d.blocks})`);
      }
    }
  });

  test('the text form is a table: effect → reps × blocks → wall time', () => {
    const r = runOrch(['plan', s.spec, '--power', '0.9', '--noise-from', s.prior, '--effect', '2%']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /90 % power/);
    assert.match(r.stdout, /^effect +reps × blocks +wall time +power/m);
    assert.match(r.stdout, /^2\.00 % +\d+ reps × \d+ blocks? +[0-9.]+ (s|min|h) +\d+ %/m);
  });

  test('bad input is a clear exit 2', () => {
    const notResults = join(s.dir, 'not-results');
    mkdirSync(notResults);
    const cases: [string[], RegExp][] = [
      [
        ['plan', '--power', s.spec],
        /give --noise-from[\s\S]*orch submit .*spec\.yaml[\s\S]*orch plan --power .*spec\.yaml --noise-from results\/<id>/,
      ],
      [
        ['plan', '--power', s.spec, '--noise-from', notResults],
        /not-results is not an orch results directory: it has no summary\.json/,
      ],
      [['plan', '--power', s.spec, '--noise-from', join(s.dir, 'no', 'such')], /no such results directory/],
      [
        ['plan', '--power', s.spec, '--noise-from', s.prior, '--effect', '0%'],
        /--effect 0%: an effect is a relative change greater than 0/,
      ],
      [
        ['plan', '--power', s.spec, '--noise-from', s.prior, '--effect=-2%'],
        /--effect -2%: an effect is a relative change greater than 0/,
      ],
      [
        ['plan', '--power', s.spec, '--power', '1.5', '--noise-from', s.prior],
        /--power 1\.5: a target power is a probability strictly between 0 and 1/,
      ],
    ];
    for (const [args, message] of cases) {
      const r = runOrch(args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message, args.join(' '));
      assert.doesNotMatch(r.stderr, STACK_FRAME);
    }
  });
});
