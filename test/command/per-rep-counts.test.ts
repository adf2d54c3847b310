/**
 * Launch counts of a per_rep program (jobs/per-rep-counts.ts, worker/command/per-rep-launches.ts):
 * orch's injection library appends its counts at each CUDA process's exit to the rep's report file;
 * orch sums them, divides by the steps the rep reported, and the Launches section says so. Here,
 * without a GPU, the library is really loaded into the rep's processes (LD_PRELOAD of the path the
 * worker hands them in CUDA_INJECTION64_PATH: the driver would load it at cuInit) and writes its
 * exit report, "never initialized", which becomes the rep's reason; the division is checked on
 * planted reports of two processes, and a cpu card or a host without the library says why.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import type { CommandRep } from '../../jobs/command-line.ts';
import { perRepCounts } from '../../jobs/per-rep-counts.ts';
import { renderLaunches } from '../../orchestrator/report/render-launches.ts';
import { LaunchSummaryFold, PER_REP_SOURCE } from '../../orchestrator/stats/launch-summary.ts';
import { PerRepLaunches } from '../../worker/command/per-rep-launches.ts';

const LIB = 'native/build/liborch_inject.so';

test("the library's exit report from the rep's real processes: loaded without cuInit, so not counted, and said so", {
  skip: existsSync(LIB) ? false : `${LIB} is not built`,
}, () => {
  const counting = new PerRepLaunches({
    backend: 'cuda',
    lib: `${process.cwd()}/${LIB}`,
    programEnv: {},
    stepRange: null,
  });
  assert.deepEqual(Object.keys(counting.env).sort(), ['CUDA_INJECTION64_PATH', 'ORCH_INJECT_REPORT']);
  // two CUDA-less processes of one rep, each loading what the worker named
  for (let i = 0; i < 2; i++) {
    const r = spawnSync('/bin/sh', ['-c', 'LD_PRELOAD=$CUDA_INJECTION64_PATH python3 -c "print(1)"'], {
      env: { PATH: process.env.PATH, ...counting.env },
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
  }
  const got = counting.read(10, 0);
  assert.equal(got.source, 'none');
  assert.match(
    got.source === 'none' ? got.reason : '',
    /^never initialized: the CUDA driver did not call InitializeInjection/,
  );
  assert.equal(existsSync(counting.env.ORCH_INJECT_REPORT!), false, 'the report file is removed');
});

test('two processes counted: summed, divided by the steps the rep reported, and the Launches section says per rep ÷ steps', () => {
  const line = (kernels: number, graphs: number) =>
    JSON.stringify({
      abi: 1,
      initialized: 1,
      status: 'counting',
      kernels,
      captured: 3,
      graphs,
      memcpy: 20,
      memset: 0,
      syncs: 10,
    });
  const counts = perRepCounts(`${line(600, 0)}\n${line(40, 10)}\n`, 20, '/tmp/r.jsonl');
  assert.deepEqual(counts, {
    source: 'cupti-rep',
    steps: 20,
    kernels: 640,
    captured: 6,
    graphs: 10,
    memcpy: 40,
    memset: 0,
    syncs: 20,
  });
  const fold = new LaunchSummaryFold();
  const rep = (arm: string, launches: unknown) =>
    ({
      v: 1,
      type: 'rep',
      id: 'r',
      arm,
      workload: 'command',
      backend: 'command',
      mode: 'eager',
      warmup: 2,
      steps: 18,
      step_ms: [1],
      step_index: [2],
      excluded: 2,
      wall_ms: 1,
      launches,
      final: true,
    }) as CommandRep;
  fold.add(rep('eager', counts));
  fold.add(rep('other', perRepCounts(null, 20, '/tmp/r.jsonl')));
  const [eager, other] = fold.rows();
  assert.deepEqual(
    [eager!.kernels_per_step, eager!.graphs_per_step, eager!.memcpy_per_step, eager!.syncs_per_step, eager!.captured],
    [32, 0.5, 2, 1, 6],
  );
  assert.equal(eager!.source, PER_REP_SOURCE);
  assert.match(other!.source, /^none: no process of the rep loaded orch's injection library/);
  const md = renderLaunches(fold.rows());
  assert.match(md, /\| eager \| eager \| 1 \| 32 \| 0\.5 \| 2 \| 0 \| 1 \| 6 \| cupti, per rep ÷ steps/);
  assert.match(md, /or else over the whole rep and divided by the steps it reported/);
});

test('bad reports and nothing to count: a reason each, never zeros', () => {
  assert.match(
    JSON.stringify(perRepCounts('{"abi":1}\n', 5, '/tmp/r.jsonl')),
    /\/tmp\/r\.jsonl line 1: not the injection library's exit report/,
  );
  assert.match(JSON.stringify(perRepCounts('garbage\n', 5, '/tmp/r.jsonl')), /line 1: not a JSON line/);
  const cpu = new PerRepLaunches({
    backend: 'cpu',
    lib: '/opt/orch/liborch_inject.so',
    programEnv: {},
    stepRange: null,
  });
  assert.deepEqual(
    [cpu.env, cpu.read(5, 0)],
    [{}, { source: 'none', reason: "a cpu card: no CUDA driver loads orch's injection library" }],
  );
  const missing = new PerRepLaunches({ backend: 'cuda', lib: null, programEnv: {}, stepRange: null });
  assert.match(JSON.stringify(missing.read(5, 0)), /not built on this worker/);
  assert.throws(
    () =>
      new PerRepLaunches({
        backend: 'cuda',
        lib: '/opt/orch/liborch_inject.so',
        programEnv: { CUDA_INJECTION64_PATH: '/opt/nsight/x.so' },
        stepRange: null,
      }),
    /do not replace it/,
  );
});
