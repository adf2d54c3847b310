/**
 * Trace mode (ORCH_INJECT_TRACE=1) slows every launch, so it must never reach a block with timed
 * reps. The path a spec takes to a rank's environment, run for real: YAML → SpecSchema →
 * compileSpec → planExperiment → buildBlockJob (the scheduler's payload) → injectionEnv (what the
 * resident rank is started with), on a cuda card with orch's library there and launch counts on,
 * for every design: only `design: probe` of a resident rank gets trace mode.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'yaml';
import { BlockJobSchema } from '../../jobs/block-job.ts';
import { compileSpec } from '../../jobs/compile-spec.ts';
import { planExperiment } from '../../jobs/plan.ts';
import { SpecSchema } from '../../jobs/spec.ts';
import { buildBlockJob } from '../../orchestrator/scheduler/build-block-job.ts';
import type { ExperimentRecord } from '../../store/experiment-store.ts';
import { injectionEnv, TRACE_VARIABLE } from '../../worker/command/launch-counter.ts';

const WORKLOAD = `workload:
  runtime: command
  run: { cmd: python3 decode.py, mode: resident, launch_counts: true }
  toggles: { GRAPH: request, FUSE: request }
toggles: [GRAPH, FUSE]
gates: { identity: false }
`;

const DESIGNS: Record<string, string> = {
  ab: 'design: ab\narms: [{ name: eager }, { name: graph, toggles: { GRAPH: true } }]\n',
  'leave-one-out': 'design: leave-one-out\n',
  sweep: 'design: sweep\nsweep: { toggle: GRAPH, values: [a, b] }\ntoggles: [FUSE]\n',
  probe: 'design: probe\narms: [{ name: eager }, { name: graph, toggles: { GRAPH: true } }]\n',
};

function blockJob(design: string) {
  const text = `name: t\n${DESIGNS[design]}${WORKLOAD}`.replace(
    design === 'sweep' ? 'toggles: [GRAPH, FUSE]\n' : '\0',
    '',
  );
  const parsed = SpecSchema.parse(parse(text));
  const { spec, problems } = compileSpec(parsed);
  assert.deepEqual(problems, [], `${design}: ${JSON.stringify(problems)}`);
  const plan = planExperiment(spec, 'h'.repeat(64));
  const exp = { id: 'x', name: 't', hash: 'h', spec, plan } as unknown as ExperimentRecord;
  return BlockJobSchema.parse(buildBlockJob(exp, 0, 1, { host: 'h', cards: ['GPU-aaaa'], epoch: 1 }));
}

test('trace mode for the trace probe only: never for a design whose reps are timed', () => {
  const lib = '/opt/orch/liborch_inject.so';
  for (const design of Object.keys(DESIGNS)) {
    const job = blockJob(design);
    const env = injectionEnv({
      backend: 'cuda',
      counts: true,
      traceProbe: job.trace_probe === true,
      lib,
      programEnv: {},
    });
    assert.equal(env.CUDA_INJECTION64_PATH, lib, `${design}: counting on`);
    assert.equal(env[TRACE_VARIABLE], design === 'probe' ? '1' : undefined, `${design}: ${JSON.stringify(env)}`);
    assert.deepEqual(
      job.arms.map((a) => a.name).slice(0, 2),
      design === 'probe' ? ['eager', 'graph'] : job.arms.map((a) => a.name).slice(0, 2),
    );
  }
  // the probe traces with counting off too; a cpu card or a host without the library gets nothing
  assert.deepEqual(injectionEnv({ backend: 'cuda', counts: false, traceProbe: true, lib, programEnv: {} }), {
    CUDA_INJECTION64_PATH: lib,
    [TRACE_VARIABLE]: '1',
  });
  assert.deepEqual(injectionEnv({ backend: 'cpu', counts: false, traceProbe: true, lib, programEnv: {} }), {});
  assert.deepEqual(injectionEnv({ backend: 'cuda', counts: false, traceProbe: true, lib: null, programEnv: {} }), {});
  assert.throws(
    () =>
      injectionEnv({
        backend: 'cuda',
        counts: false,
        traceProbe: true,
        lib,
        programEnv: { CUDA_INJECTION64_PATH: '/opt/nsight/x.so' },
      }),
    /the trace probe traces through orch's injection library and do not replace it/,
  );
});
