/**
 * The trace probe's summary over committed records (orchestrator/stats/trace-probe.ts): the floor
 * from graphrt's chain runs, one per rank process however many records carry it; a floor measured
 * on graphrt's cpu backend reported but never used for an estimate; a traced arm with no floor says
 * so instead of estimating against a number made up; the probe passes once every planned rep
 * committed, traced or not.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ChainFloorRun } from '../../jobs/chain-floor-run.ts';
import { type OrchRankTrace, OrchRankTraceSchema } from '../../jobs/orch-rank-protocol.ts';
import type { ProbeRecord } from '../../jobs/probe-record.ts';
import { renderTrace } from '../../orchestrator/report/render-trace.ts';
import { graphNodeFloorNs } from '../../orchestrator/stats/graph-node-floor.ts';
import { summarizeStep } from '../../orchestrator/stats/kernel-trace.ts';
import { summarizeTraceProbe, traceFloorOf } from '../../orchestrator/stats/trace-probe.ts';

/** A chain run; on cuda its traced kernel ran `kernelBusyNs` (default 100 ns), unless `kernelBusyNs` is null (a record made before it was traced). */
const chain = (backend: 'cpu' | 'cuda', perNodeMs: number[], kernelBusyNs: number | null = 100): ChainFloorRun => ({
  source: 'graphrt-chain',
  backend,
  device: backend === 'cuda' ? 'NVIDIA H200' : 'cpu emulation',
  kernels: 256,
  reps: perNodeMs.map((ms) => ({ mode: 'graph', nodes: 256, step_ms: [ms * 256, ms * 256 * 1.1, ms * 256 * 0.9] })),
  ...(kernelBusyNs === null
    ? {}
    : { kernel: backend === 'cuda' ? { ns: kernelBusyNs } : { reason: "graphrt's cpu backend: no kernels to trace" } }),
});

const step = { start_ns: 0, end_ns: 100_000 };
const kernels = Array.from({ length: 10 }, (_, i) => ({
  start_ns: 1_000 + i * 9_000,
  end_ns: 4_000 + i * 9_000,
  graph_id: 0,
  stream_id: 7,
}));
const traced = (arm: string): OrchRankTrace =>
  OrchRankTraceSchema.parse({
    v: 1,
    type: 'trace',
    id: `t-${arm}`,
    arm,
    mode: 'eager',
    t_start_ns: 1,
    t_end_ns: 2,
    final: true,
    trace: { source: 'cupti', steps: [step], kernels, graphs: [], dropped: 0 },
  });

function record(block: number, rep: number, arm: string, floor: ChainFloorRun, trace: OrchRankTrace): ProbeRecord {
  return {
    experiment: 'x',
    block,
    attempt: 1,
    epoch: 1,
    arm,
    rep,
    position: rep,
    kind: 'trace',
    backend: 'cuda',
    host: 'h',
    ranks: [{ rank: 0, card: 'h/cuda:0', device: 'NVIDIA H200', probes: [], trace, floor }],
  };
}

test("one chain run per rank process: the floor is the median of its reps, not of every record's copy", () => {
  const a = chain('cuda', [0.0004, 0.0005, 0.0009]);
  const b = chain('cuda', [0.0006, 0.0006, 0.0006]);
  // block 0's run rides on 3 records, block 1's on 1: counted once each
  const recs = [
    record(0, 0, 'eager', a, traced('eager')),
    record(0, 1, 'eager', a, traced('eager')),
    record(0, 2, 'eager', a, traced('eager')),
    record(1, 0, 'eager', b, traced('eager')),
  ];
  const s = summarizeTraceProbe(4, ['eager'], recs);
  const want = graphNodeFloorNs([
    ...(a.source === 'graphrt-chain' ? a.reps : []),
    ...(b.source === 'graphrt-chain' ? b.reps : []),
  ]);
  assert.equal(s.floor.source === 'graphrt-chain' && s.floor.ns_per_node, want);
  assert.equal(s.floor.source === 'graphrt-chain' && s.floor.reps, 6);
  // the estimates add per kernel the floor less the chain kernel's own traced run time
  assert.deepEqual(s.floor.source === 'graphrt-chain' && s.floor.node_cost, { ns: want - 100, kernel_busy_ns: 100 });
  assert.equal(s.arms[0]!.summary!.recoverable_ns, summarizeStep({ ...step, kernels }, want - 100).recoverable_ns);
  assert.deepEqual([s.pass, s.missing], [true, 0]);
});

test("a cpu card's chain floor is reported, never estimated against; a traced arm without a floor is summarised all the same and says why it has no estimate", () => {
  const cpu = summarizeTraceProbe(1, ['eager'], [record(0, 0, 'eager', chain('cpu', [0.0002]), traced('eager'))]);
  assert.equal(cpu.floor.source === 'graphrt-chain' && cpu.floor.gpu, false);
  // busy share, kernels, short kernels and gaps need no floor
  const s = cpu.arms[0]!.summary!;
  const floorless = summarizeStep({ ...step, kernels }, null);
  assert.deepEqual(
    [s.busy_share, s.kernels, s.short_kernels, s.gaps_ns],
    [0.3, 10, 10, floorless.gaps_ns.reduce((a, g) => a + g, 0)],
  );
  assert.deepEqual(
    [s.graph_step_estimate_ns, s.recoverable_ns, s.recoverable_share, s.pdl_upside_per_kernel_ns, s.floor_ns],
    [null, null, null, null, null],
  );
  assert.equal(cpu.arms[0]!.reason, undefined);
  assert.match(
    cpu.arms[0]!.estimate_reason ?? '',
    /^no graph-node floor to estimate against: the chain ran on graphrt's cpu backend \(cpu emulation\): not a GPU floor$/,
  );
  assert.equal(cpu.graph_check, null);
  const md = renderTrace(cpu.arms, cpu.floor, cpu.message, cpu.graph_check);
  assert.match(
    md,
    /\| eager \| eager \| 1 \| 100\.00 \| 30\.0 % \| 10 \| 10 \| 54\.00 \| — \| — \| — \| no estimate: no graph-node floor to estimate against: the chain ran on graphrt's cpu backend/,
  );
  assert.match(md, /Would a graph help: no check/);
  const none = summarizeTraceProbe(
    2,
    ['eager', 'graph'],
    [record(0, 0, 'eager', { source: 'none', reason: 'no graphrt on this worker' }, traced('eager'))],
  );
  assert.deepEqual(none.floor, { source: 'none', reason: 'no graphrt on this worker' });
  assert.match(
    none.arms[0]!.estimate_reason ?? '',
    /no graph-node floor to estimate against: no graphrt on this worker/,
  );
  assert.equal(none.arms[0]!.summary!.kernels, 10);
  assert.deepEqual([none.pass, none.missing], [false, 1]);
  assert.match(none.message, /^1 of 2 planned trace reps committed/);
  assert.deepEqual(traceFloorOf([]), { source: 'none', reason: 'no chain run reached the probe record' });
});

test("would a graph help, checked: the eager arm's edges + busy + kernels × floor against the graph arm's traced step, a difference over 10 % said", () => {
  const floorRun = chain('cuda', [0.0006]);
  // what a graph adds per node beyond its kernel's busy time: the floor less the chain's traced busy per kernel
  const floorNs = graphNodeFloorNs(floorRun.source === 'graphrt-chain' ? floorRun.reps : []) - 100;
  // the eager step's idle before its first kernel and after its last: host time a graph keeps
  const lead = kernels[0]!.start_ns - step.start_ns;
  const tail = step.end_ns - kernels.at(-1)!.end_ns;
  const busy = kernels.reduce((a, k) => a + k.end_ns - k.start_ns, 0);
  // the graph arm: the same ten kernels back to back, one floor apart, with the eager step's edges
  const graphStep = (perNode: number): OrchRankTrace => {
    const ks = Array.from({ length: 10 }, (_, i) => ({
      start_ns: lead + i * (3_000 + perNode),
      end_ns: lead + i * (3_000 + perNode) + 3_000,
      graph_id: 5,
      stream_id: 7,
    }));
    return OrchRankTraceSchema.parse({
      v: 1,
      type: 'trace',
      id: 't-graph',
      arm: 'graph',
      mode: 'graph',
      t_start_ns: 1,
      t_end_ns: 2,
      final: true,
      trace: {
        source: 'cupti',
        steps: [{ start_ns: 0, end_ns: ks.at(-1)!.end_ns + perNode + tail }],
        kernels: ks,
        graphs: [],
        dropped: 0,
      },
    });
  };
  // eager's edges + busy + its kernels × what a graph adds per node
  const estimate = lead + tail + busy + kernels.length * floorNs;
  const close = summarizeTraceProbe(
    2,
    ['eager', 'graph'],
    [record(0, 0, 'eager', floorRun, traced('eager')), record(0, 1, 'graph', floorRun, graphStep(floorNs))],
  );
  assert.deepEqual(close.graph_check, {
    eager_arm: 'eager',
    graph_arm: 'graph',
    estimate_ns: estimate,
    measured_ns: estimate,
    ratio: 1,
    differs: false,
  });
  assert.match(
    renderTrace(close.arms, close.floor, close.message, close.graph_check),
    /graph step estimated [\d.]+ µs \(idle at the step's edges \+ busy \+ kernels × what a graph adds per node\), graph measured [\d.]+ µs under tracing: ratio 1\.000, within 10 %\./,
  );
  const far = summarizeTraceProbe(
    2,
    ['eager', 'graph'],
    [record(0, 0, 'eager', floorRun, traced('eager')), record(0, 1, 'graph', floorRun, graphStep(4 * floorNs))],
  );
  assert.equal(far.graph_check?.differs, true);
  assert.ok(far.graph_check!.ratio < 0.9, String(far.graph_check?.ratio));
  assert.match(
    renderTrace(far.arms, far.floor, far.message, far.graph_check),
    /they differ by more than 10 % \(the estimate is lower/,
  );
});

test("the chain's busy time per kernel comes off the floor: untraced (an older record), or twice the floor or more, there is no estimate and the reason says why; a little longer, the estimate takes the difference off", () => {
  const floorNs = (run: ChainFloorRun) => graphNodeFloorNs(run.source === 'graphrt-chain' ? run.reps : []);
  const untraced = chain('cuda', [0.0006], null);
  const old = summarizeTraceProbe(1, ['eager'], [record(0, 0, 'eager', untraced, traced('eager'))]);
  assert.equal(old.arms[0]!.summary!.graph_step_estimate_ns, null);
  assert.match(
    old.arms[0]!.estimate_reason ?? '',
    /^no graph-node floor to estimate against: the chain's busy time per kernel was not traced \(a record made before it was\)$/,
  );
  assert.match(
    renderTrace(old.arms, old.floor, old.message, old.graph_check),
    /Graph-node floor: 0\.60 µs per node, measured by graphrt's chain on NVIDIA H200 \(1 graph reps\); no estimate: the chain's busy time per kernel was not traced/,
  );
  const noLib = chain('cuda', [0.0006], null);
  if (noLib.source === 'graphrt-chain')
    noLib.kernel = { reason: "orch's injection library is not built on this worker" };
  assert.match(
    summarizeTraceProbe(1, ['eager'], [record(0, 0, 'eager', noLib, traced('eager'))]).arms[0]!.estimate_reason ?? '',
    /not traced: orch's injection library is not built on this worker$/,
  );
  // traced longer than its graph's node (the H100: 1.081 against 0.983 µs): tracing lengthened each
  // kernel more than a graph adds, and the estimate takes the difference off per kernel
  const slow = chain('cuda', [0.0006], 700);
  const over = summarizeTraceProbe(1, ['eager'], [record(0, 0, 'eager', slow, traced('eager'))]);
  const cost = floorNs(slow) - 700;
  assert.ok(cost < 0, `the chain's 0.700 µs kernel is longer than its ${floorNs(slow)} ns node`);
  assert.deepEqual(over.floor.source === 'graphrt-chain' && over.floor.node_cost, { ns: cost, kernel_busy_ns: 700 });
  const s = over.arms[0]!.summary!;
  assert.equal(s.graph_step_estimate_ns, s.edge_idle_ns + s.busy_ns + s.kernels * cost);
  assert.ok(s.recoverable_ns !== null && s.recoverable_ns >= 0);
  assert.match(
    renderTrace(over.arms, over.floor, over.message, over.graph_check),
    /longer than a node of its graph: tracing lengthens a kernel by 0\.10 µs more than a graph adds per node/,
  );
  // twice the node or more: not the chain's own trace, no estimate
  const disturbed = chain('cuda', [0.0006], 1300);
  assert.match(
    summarizeTraceProbe(1, ['eager'], [record(0, 0, 'eager', disturbed, traced('eager'))]).arms[0]!.estimate_reason ??
      '',
    /the chain's kernels kept the card busy 1\.300 µs each, traced, twice or more the 0\.600 µs per node/,
  );
  // two runs: the median of their traced kernels
  const a = chain('cuda', [0.0006], 200);
  const b = chain('cuda', [0.0006], 400);
  const both = summarizeTraceProbe(
    2,
    ['eager'],
    [record(0, 0, 'eager', a, traced('eager')), record(1, 0, 'eager', b, traced('eager'))],
  );
  assert.deepEqual(both.floor.source === 'graphrt-chain' && both.floor.node_cost, {
    ns: floorNs(a) - 300,
    kernel_busy_ns: 300,
  });
  assert.match(
    renderTrace(both.arms, both.floor, both.message, both.graph_check),
    /the chain's kernels kept the card busy 0\.30 µs each \(traced\), so a graph adds 0\.30 µs per node beyond its kernels' busy time/,
  );
});
