/** Every file in configs/ parses with the real schemas, so the examples never rot. */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isTraceProbe } from '../../jobs/compile-spec.ts';
import { planExperiment } from '../../jobs/plan.ts';
import { loadConfigFile, loadSpec } from '../../orchestrator/spec/load-spec.ts';

const files = readdirSync('configs')
  .filter((f) => /\.ya?ml$/.test(f))
  .sort();

describe('configs/', () => {
  it('holds the example files the README names', () => {
    for (const f of [
      'leave-one-out.yaml',
      'ab.yaml',
      'capture-probe.yaml',
      'command-ab.yaml',
      'nightly.yaml',
      'cluster.yaml',
    ]) {
      assert.ok(files.includes(f), `configs/${f} is missing`);
    }
  });

  for (const f of files) {
    it(`${f} validates and (if an experiment) plans`, () => {
      const loaded = loadConfigFile(join('configs', f));
      if (loaded.kind === 'experiment') {
        const plan = planExperiment(loaded.spec, loaded.hash);
        assert.ok(plan.blocks.length >= 1 && plan.arms.length >= 1);
      }
    });
  }

  it('the kinds are what the names say', () => {
    const kinds = Object.fromEntries(files.map((f) => [f, loadConfigFile(join('configs', f)).kind]));
    assert.equal(kinds['nightly.yaml'], 'suite');
    assert.equal(kinds['cluster.yaml'], 'cluster');
    assert.equal(kinds['command-ab.yaml'], 'experiment');
  });

  it("torch-decode-trace.yaml is a trace probe of a user's program: design probe, a resident command rank", () => {
    const { spec } = loadSpec('configs/torch-decode-trace.yaml');
    assert.equal(spec.design, 'probe');
    assert.equal(spec.workload.runtime, 'command');
    assert.ok(isTraceProbe(spec), 'the block job would carry trace_probe');
  });

  it('leave-one-out.yaml stays small enough for the embedded default on 2 CPU cores', () => {
    const { spec } = loadSpec('configs/leave-one-out.yaml');
    assert.equal(spec.workload.runtime, 'native');
    assert.deepEqual(spec.toggles, ['graph', 'pdl', 'overlap', 'split_combine']);
    const plan = planExperiment(spec, '');
    const steps = plan.arms.length * plan.reps * plan.blocks.length * (spec.workload.warmup + spec.workload.steps);
    assert.ok(steps <= 1000, `${steps} steps planned`);
  });
});
