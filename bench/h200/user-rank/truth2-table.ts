/**
 * Issue 40's three tables (and the profiler row) from what truth2.sh left in WORK: results
 * directories of `orch submit` (their report.json) and the --standalone JSON lines.
 *   node --import tsx bench/h200/user-rank/truth2-table.ts WORK
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  armMs,
  exitOf as exitIn,
  fixed as f,
  line as lineIn,
  mean,
  ratio,
  report as reportIn,
} from './bench-results.ts';

const work = process.argv[2] ?? '/tmp/truth2';
const report = (name: string) => reportIn(work, name);
const line = (name: string) => lineIn(work, name);
const exitOf = (name: string) => exitIn(work, name);
/** The card the run had, as truth2.sh's nvidia-smi line in summary.txt names it (the device tool lends H100s too). */
const cardName = (() => {
  try {
    return /^(NVIDIA [^,\n]+),/m.exec(readFileSync(join(work, 'summary.txt'), 'utf8'))?.[1] ?? 'an unnamed card';
  } catch {
    return 'an unnamed card';
  }
})();

// 1. the trace probe and would a graph help
console.log(
  "== 1. the trace probe on the card; would a graph help (estimate = the eager arm's idle at its steps' edges + busy + kernels × what a graph adds per node: the chain's floor less its traced busy time per kernel; measured = the graph arm untraced, the CUDA example's at the trace's own steps)",
);
console.log(
  '| program | orch submit | eager traced: busy, kernels (< 5 µs), gaps | edge idle µs | floor µs/node | chain busy per kernel µs (traced) | added per node µs | estimate ms | estimate without the edges ms | graph traced ms | graph measured ms (untraced) | estimate/measured | without the edges | within 10 % |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
// the CUDA example at the trace's own steps (cuda-twin); runs without it, at cuda-off's 8 + 64
const cudaMeasured =
  armMs(report('cuda-twin'), 'graph') ??
  mean([armMs(report('cuda-off-1'), 'graph'), armMs(report('cuda-off-2'), 'graph')]);
const measured: Record<string, number | null> = {
  'torch-trace': armMs(report('torch-off-1'), 'graph'),
  'cuda-trace': cudaMeasured,
  'hf-trace': line('hf-standalone')?.graph_ms_median ?? null,
};
for (const name of ['torch-trace', 'hf-trace', 'cuda-trace']) {
  const t = report(name)?.trace;
  const eager = t?.arms.find((a) => a.mode === 'eager');
  const graph = t?.arms.find((a) => a.mode === 'graph');
  const s = eager?.summary ?? null;
  const est = s?.graph_step_estimate_ns != null ? s.graph_step_estimate_ns / 1e6 : null;
  const edgeMs = s === null ? null : s.edge_idle_ns / 1e6;
  const bare = est === null || edgeMs === null ? null : est - edgeMs;
  const r = ratio(est, measured[name] ?? null);
  const traced =
    s === null
      ? `not traced: ${eager?.reason ?? t?.message ?? 'no report'}`
      : `${(s.busy_share * 100).toFixed(1)} %, ${s.kernels} (${s.short_kernels}), ${(s.gaps_ns / 1000).toFixed(1)} µs${eager?.estimate_reason ? `; ${eager.estimate_reason}` : ''}`;
  const floor =
    t?.floor.ns_per_node !== undefined
      ? (t.floor.ns_per_node / 1000).toFixed(3)
      : `— (${t?.floor.reason ?? 'no report'})`;
  const cost = t?.floor.node_cost;
  const kernelUs =
    cost?.kernel_busy_ns !== undefined ? (cost.kernel_busy_ns / 1000).toFixed(3) : `— (${cost?.reason ?? 'no report'})`;
  const addedUs = cost?.ns !== undefined ? (cost.ns / 1000).toFixed(3) : '—';
  console.log(
    `| ${name} | ${exitOf(name)} | ${traced} | ${edgeMs === null ? '—' : (edgeMs * 1000).toFixed(1)} | ${floor} | ${kernelUs} | ${addedUs} | ${f(est)} | ${f(bare)} | ${f(graph?.summary ? graph.summary.step_ns / 1e6 : null)} | ${f(measured[name] ?? null)} | ${f(r, 3)} | ${f(ratio(bare, measured[name] ?? null), 3)} | ${r === null ? '—' : Math.abs(r - 1) <= 0.1 ? 'yes' : 'NO'} |`,
  );
}
// 1b. what a graph node costs in the program itself against the chain's floor: the estimate adds
// kernels × floor to the eager arm's busy time, and the chain's floor (graphrt's graph of empty
// kernels, step ÷ nodes) holds an empty kernel's own run time besides the launch gap, which busy
// already counts for a real kernel. Shown, not fitted: the measured graph step less busy, per kernel.
console.log(
  '\n| program | eager busy ms (traced) | kernels | (graph measured − busy) ÷ kernels µs | chain floor µs/node | ratio to the floor | added per node µs (floor − chain kernel) | ratio to it |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
for (const name of ['torch-trace', 'hf-trace', 'cuda-trace']) {
  const t = report(name)?.trace;
  const s = t?.arms.find((a) => a.mode === 'eager')?.summary ?? null;
  const m = measured[name] ?? null;
  const perNode = s === null || m === null || s.kernels === 0 ? null : ((m - s.busy_ns / 1e6) * 1000) / s.kernels;
  const floorUs = t?.floor.ns_per_node !== undefined ? t.floor.ns_per_node / 1000 : null;
  const addedUs = t?.floor.node_cost?.ns !== undefined ? t.floor.node_cost.ns / 1000 : null;
  console.log(
    `| ${name} | ${f(s === null ? null : s.busy_ns / 1e6)} | ${s?.kernels ?? '—'} | ${f(perNode, 3)} | ${f(floorUs, 3)} | ${f(ratio(perNode, floorUs), 2)} | ${f(addedUs, 3)} | ${f(ratio(perNode, addedUs), 2)} |`,
  );
}
console.log(
  'before (issue 40): the trace probe failed on every rep ("Too big: expected int to be <=9007199254740991", 11 000+ issues per rep); orch\'s old estimate came out negative for the bf16 decode and the Llama.',
);

// 2. counting on and off through orch
console.log('\n== 2. counting on vs off through orch (arm medians, ms; target on/off ≤ 1.01)');
console.log('| program | arm | on | off | on/off | ≤ 1.01 | before (issue 40) |');
console.log('| --- | --- | --- | --- | --- | --- | --- |');
const costRows: string[] = [];
const before: Record<string, string> = {
  'cuda eager': '0.984',
  'cuda graph': '1.083 (graph + PDL)',
  'torch eager': '—',
  'torch graph': '—',
};
for (const [prog, runs] of [
  ['cuda', [1, 2]],
  ['torch', [1]],
] as const) {
  for (const arm of ['eager', 'graph']) {
    const on = mean(runs.map((i) => armMs(report(`${prog}-on-${i}`), arm)));
    const off = mean(runs.map((i) => armMs(report(`${prog}-off-${i}`), arm)));
    const r = ratio(on, off);
    const each = runs
      .map((i) => `${f(armMs(report(`${prog}-on-${i}`), arm))}/${f(armMs(report(`${prog}-off-${i}`), arm))}`)
      .join(', ');
    console.log(
      `| ${prog} (${each}) | ${arm} | ${f(on)} | ${f(off)} | ${f(r)} | ${r === null ? '—' : r <= 1.01 ? 'yes' : 'NO'} | ${before[`${prog} ${arm}`]} |`,
    );
    if (r !== null)
      costRows.push(
        `  { program: '${prog === 'cuda' ? 'the CUDA example (examples/cuda-decode)' : 'the PyTorch example (examples/torch-decode)'}', step: '${arm}', on_off: ${r.toFixed(3)}, measured: '${cardName}, bench/h200/user-rank/truth2.sh, ${new Date().toISOString().slice(0, 10)}' },`,
      );
  }
}
// 2b. which callback costs a graph step
console.log(
  "\n== 2b. which of the library's callbacks costs a graph step (ORCH_INJECT_ONLY: only these kinds' callbacks enabled; ms, ratio to the same program without the library)",
);
console.log('| program | where | callbacks enabled | graph ms | eager ms | graph / without | eager / without |');
console.log('| --- | --- | --- | --- | --- | --- | --- |');
{
  const offGraph = mean([1, 2].map((i) => armMs(report(`cuda-off-${i}`), 'graph')));
  const offEager = mean([1, 2].map((i) => armMs(report(`cuda-off-${i}`), 'eager')));
  const orchRows: [string, (number | null)[], (number | null)[]][] = [
    [
      'every kind',
      [1, 2].map((i) => armMs(report(`cuda-on-${i}`), 'graph')),
      [1, 2].map((i) => armMs(report(`cuda-on-${i}`), 'eager')),
    ],
    ['graphs only', [armMs(report('cuda-only-graphs-1'), 'graph')], [armMs(report('cuda-only-graphs-1'), 'eager')]],
    [
      'every kind but graphs',
      [armMs(report('cuda-only-nographs-1'), 'graph')],
      [armMs(report('cuda-only-nographs-1'), 'eager')],
    ],
  ];
  for (const [what, g, e] of orchRows)
    console.log(
      `| cuda | orch | ${what} | ${f(mean(g))} | ${f(mean(e))} | ${f(ratio(mean(g), offGraph))} | ${f(ratio(mean(e), offEager))} |`,
    );
  const cudaNone = (k: string) => mean([1, 2].map((i) => line(`idle-cuda-none-${i}`)?.[k] ?? null));
  const all = line('only-cuda-all-1');
  console.log(
    `| cuda | standalone (no per-step reads) | every kind | ${f(all?.graph_ms ?? null)} | ${f(all?.eager_ms ?? null)} | ${f(ratio(all?.graph_ms ?? null, cudaNone('graph_ms')))} | ${f(ratio(all?.eager_ms ?? null, cudaNone('eager_ms')))} |`,
  );
  const torchNone = (k: string) => mean([1, 2].map((i) => line(`idle-torch-none-${i}`)?.[k] ?? null));
  const torchSub = (k: string) => mean([1, 2].map((i) => line(`idle-torch-subscribed-${i}`)?.[k] ?? null));
  console.log(
    `| torch | standalone | none (subscribed) | ${f(torchSub('graph_ms_median'))} | ${f(torchSub('eager_ms_median'))} | ${f(ratio(torchSub('graph_ms_median'), torchNone('graph_ms_median')))} | ${f(ratio(torchSub('eager_ms_median'), torchNone('eager_ms_median')))} |`,
  );
  for (const kinds of ['all', 'graphs', 'kernels', 'memcpy', 'syncs']) {
    const l = line(`only-torch-${kinds}-1`);
    console.log(
      `| torch | standalone | ${kinds === 'all' ? 'every kind' : kinds} | ${f(l?.graph_ms_median ?? null)} | ${f(l?.eager_ms_median ?? null)} | ${f(ratio(l?.graph_ms_median ?? null, torchNone('graph_ms_median')))} | ${f(ratio(l?.eager_ms_median ?? null, torchNone('eager_ms_median')))} |`,
    );
  }
}

console.log('\njobs/counting-cost.ts COUNTING_COST from this run:');
console.log(costRows.join('\n'));

// 3. the idle library outside orch
console.log(
  '\n== 3. the injection library loaded and idle (ORCH_INJECT_ONLY=none), outside orch, medians of two alternated runs (ms; target idle/none ≤ 1.005)',
);
console.log(
  '| program | step | none | idle (nothing subscribed) | idle/none | ≤ 1.005 | subscribed, nothing enabled (before) | before/none |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
for (const [prog, fields] of [
  ['torch', { eager: 'eager_ms_median', graph: 'graph_ms_median' }],
  ['cuda', { eager: 'eager_ms', graph: 'graph_ms', 'graph+pdl': 'graph_pdl_ms' }],
] as const) {
  for (const [step, field] of Object.entries(fields)) {
    const v = (kind: string) => mean([1, 2].map((i) => line(`idle-${prog}-${kind}-${i}`)?.[field] ?? null));
    const none = v('none'),
      idle = v('idle'),
      sub = v('subscribed');
    const r = ratio(idle, none);
    console.log(
      `| ${prog} | ${step} | ${f(none)} | ${f(idle)} | ${f(r)} | ${r === null ? '—' : r <= 1.005 ? 'yes' : 'NO'} | ${f(sub)} | ${f(ratio(sub, none))} |`,
    );
  }
}

// 4. the profiler
console.log(
  '\n== 4. torch.profiler against the injection library (the PyTorch example, eager, kernel launches per step)',
);
const p = line('profiler') as unknown as Record<string, unknown> | null;
if (p === null) console.log(`not measured: ${exitOf('profiler')}; see profiler.err`);
else {
  const first = (k: string) => (Array.isArray(p[k]) ? (p[k] as number[])[0] : p[k]);
  const deviceKernels =
    typeof p.profiler_device_kernels_total === 'number' && typeof p.steps === 'number'
      ? (p.profiler_device_kernels_total / p.steps).toFixed(2)
      : '—';
  console.log(
    '| profiler (launch APIs listed) | profiler (every cu*Launch* API but graphs and host funcs) | profiler: GPU kernels ÷ steps | injection library | equal | API names the profiler saw in step 0 |',
  );
  console.log('| --- | --- | --- | --- | --- | --- |');
  console.log(
    `| ${first('profiler_launches_per_step')} | ${first('profiler_any_launch_per_step')} | ${deviceKernels} | ${first('injection_kernels_per_step')} | ${String(p.equal)} | ${JSON.stringify(p.profiler_launch_names_step0 ?? {})} |`,
  );
  // where the three counts part: the step's launches outside its graph body (a graph rep's kernels
  // per replayed step) beside the body's captured launches, and the GPU kernels by the API the
  // profiler correlates them with (none: a kernel whose launch the profiler recorded no API for)
  console.log(
    `\ninjection: captured in the graph body ${String(p.captured_in_graph_rep ?? '—')} + launched outside it per replayed step ${String(first('kernels_per_step_in_graph_mode') ?? '—')} = eager step ${String(first('injection_kernels_per_step'))}`,
  );
  console.log(
    `profiler: GPU kernels per step by launching API: ${JSON.stringify(p.profiler_device_kernels_by_api ?? 'not measured')}; kernels without a recorded API, by name (whole run): ${JSON.stringify(p.profiler_orphan_kernels ?? 'not measured')}`,
  );
}
