/**
 * The trace probe's summary (orchestrator/stats/kernel-trace.ts) on planted kernel intervals: the
 * busy share and the gaps against a computed oracle (every nanosecond of a small step marked busy
 * or idle), and the recoverable estimate and PDL upside of steps built from a launch-bound eager
 * pattern and a graph replay, with the floor from planted chain reps (graph-node-floor.ts). The
 * trace itself comes from CUPTI on a GPU: not run here.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { OrchRankTraceSchema } from '../../jobs/orch-rank-protocol.ts';
import { mulberry32 } from '../../jobs/seeded-random.ts';
import { renderTrace } from '../../orchestrator/report/render-trace.ts';
import { median } from '../../orchestrator/stats/descriptive.ts';
import { graphNodeFloorNs } from '../../orchestrator/stats/graph-node-floor.ts';
import {
  GAP_BINS_US,
  gapHistogram,
  SHORT_KERNEL_NS,
  summarizeStep,
  summarizeTrace,
  type TracedKernel,
  type TracedStep,
} from '../../orchestrator/stats/kernel-trace.ts';
import { traceArmOf } from '../../orchestrator/stats/trace-arm.ts';

/** Busy and idle nanoseconds of a step, one by one: busy ns, and the idle runs between busy ones. */
function rasterOracle(step: TracedStep): { busy: number; gaps: number[]; edges: number } {
  const busy: boolean[] = [];
  for (let t = step.start_ns; t < step.end_ns; t++)
    busy.push(step.kernels.some((k) => k.start_ns <= t && t < k.end_ns));
  const first = busy.indexOf(true);
  const last = busy.lastIndexOf(true);
  const gaps: number[] = [];
  let run = 0;
  for (let i = first; first >= 0 && i <= last; i++) {
    if (!busy[i]) run++;
    else if (run > 0) {
      gaps.push(run);
      run = 0;
    }
  }
  return { busy: busy.filter(Boolean).length, gaps, edges: first < 0 ? busy.length : first + (busy.length - 1 - last) };
}

const kernel = (start_ns: number, end_ns: number, stream_id = 7, graph_id = 0): TracedKernel => ({
  start_ns,
  end_ns,
  stream_id,
  graph_id,
});

/** Planted chain reps: `nodes` nodes of `perNodeNs` each, a little spread between steps. */
function chainReps(perNodeNs: number, nodes: number, random: () => number) {
  return Array.from({ length: 5 }, () => ({
    mode: 'graph' as const,
    nodes,
    step_ms: Array.from({ length: 9 }, () => (nodes * perNodeNs * (1 + 0.02 * (random() - 0.5))) / 1e6),
  }));
}

describe('kernel trace summary', () => {
  test('busy share and gaps equal the nanosecond oracle: overlaps across streams, kernels past the step edges', () => {
    const random = mulberry32(2026);
    for (let trial = 0; trial < 200; trial++) {
      const start_ns = Math.floor(random() * 50);
      const end_ns = start_ns + 100 + Math.floor(random() * 400);
      const kernels = Array.from({ length: Math.floor(random() * 12) }, () => {
        const a = Math.floor(random() * 600) - 50;
        return kernel(a, a + 1 + Math.floor(random() * 60), Math.floor(random() * 3));
      });
      const step = { start_ns, end_ns, kernels };
      const got = summarizeStep(step, 0);
      const oracle = rasterOracle(step);
      assert.equal(got.busy_ns, oracle.busy, `trial ${trial}`);
      assert.deepEqual(got.gaps_ns, oracle.gaps, `trial ${trial}`);
      assert.equal(got.edge_idle_ns, oracle.edges, `trial ${trial}`);
      // the graph step keeps the step's edges (host time around its launches) and its busy time,
      // and pays what a graph adds per node (none here) in place of the gaps between kernels
      assert.equal(
        got.graph_step_estimate_ns,
        end_ns - start_ns - oracle.gaps.reduce((a, g) => a + g, 0),
        `trial ${trial}: the step less its gaps`,
      );
      assert.equal(got.busy_share, oracle.busy / (end_ns - start_ns));
      assert.equal(
        got.kernels,
        kernels.filter((k) => k.end_ns > start_ns && k.start_ns < end_ns).length,
        'a kernel counts when it ran inside the step',
      );
    }
  });

  test('the floor is the chain graph step over its nodes, a median over reps; no rep, no floor', () => {
    const perNode = 640;
    const floor = graphNodeFloorNs(chainReps(perNode, 256, mulberry32(7)));
    assert.ok(Math.abs(floor - perNode) / perNode < 0.01, `${floor} from a planted ${perNode} ns per node`);
    assert.throws(() => graphNodeFloorNs([]), /measured on the card, never assumed/);
    assert.throws(() => graphNodeFloorNs([{ mode: 'eager', nodes: 256, step_ms: [1] }]), /ran eager/);
  });

  test('a launch-bound eager step: the gaps beyond one floor per kernel are recoverable; a graph replay of it: nothing', () => {
    const random = mulberry32(11);
    const floor = graphNodeFloorNs(chainReps(650, 128, random));
    const n = 40;
    const runNs = 2_000; // short kernels
    const launchNs = 4_200; // one eager launch apart: the GPU idles between them
    const eager = {
      start_ns: 0,
      end_ns: n * launchNs + 10_000,
      kernels: Array.from({ length: n }, (_, i) => kernel(5_000 + i * launchNs, 5_000 + i * launchNs + runNs)),
    };
    const e = summarizeStep(eager, floor);
    const gaps = (n - 1) * (launchNs - runNs);
    assert.deepEqual(
      e.gaps_ns,
      Array.from({ length: n - 1 }, () => launchNs - runNs),
    );
    assert.equal(e.recoverable_ns, gaps - n * floor);
    assert.equal(e.short_kernels, runNs < SHORT_KERNEL_NS ? n : 0);
    assert.equal(e.busy_share, (n * runNs) / (eager.end_ns - eager.start_ns));
    assert.equal(e.dependent_kernels, n - 1);
    assert.equal(e.pdl_upside_ns, (n - 1) * Math.min(launchNs - runNs, floor));
    // the same kernels replayed by a graph: one floor apart, nothing left for capture to win
    const graph = {
      start_ns: 0,
      end_ns: n * (runNs + floor) + 1_000,
      kernels: Array.from({ length: n }, (_, i) =>
        kernel(500 + i * (runNs + floor), 500 + i * (runNs + floor) + runNs, 7, 3),
      ),
    };
    const g = summarizeStep(graph, floor);
    assert.equal(g.recoverable_ns, 0);
    assert.equal(g.graph_kernels, n);
    assert.ok(g.busy_share > e.busy_share);
  });

  test('over steps: medians of each step, the PDL upside per dependent kernel, one histogram of every gap', () => {
    const random = mulberry32(5);
    const floor = 600;
    const steps = Array.from({ length: 9 }, (_, s) => {
      const gap = 1_000 + Math.floor(random() * 30_000);
      return {
        start_ns: s * 1e6,
        end_ns: s * 1e6 + 200_000,
        kernels: Array.from({ length: 5 }, (_, i) =>
          kernel(s * 1e6 + 1_000 + i * (3_000 + gap), s * 1e6 + 1_000 + i * (3_000 + gap) + 3_000),
        ),
      };
    });
    const each = steps.map((st) => summarizeStep(st, floor));
    const sum = summarizeTrace(steps, floor)!;
    assert.equal(sum.steps, 9);
    assert.equal(sum.recoverable_ns, median(each.map((s) => s.recoverable_ns!)));
    assert.equal(sum.busy_share, median(each.map((s) => s.busy_share)));
    assert.equal(
      sum.pdl_upside_per_kernel_ns,
      each.reduce((a, s) => a + s.pdl_upside_ns!, 0) / each.reduce((a, s) => a + s.dependent_kernels, 0),
    );
    assert.equal(sum.graph_step_estimate_ns, median(each.map((s) => s.edge_idle_ns + s.busy_ns + s.kernels * floor)));
    const all = each.flatMap((s) => s.gaps_ns);
    assert.deepEqual(sum.histogram, gapHistogram(all));
    assert.equal(
      sum.histogram.reduce((a, c) => a + c, 0),
      all.length,
      'every gap in one bin',
    );
    // a gap at each bin's lower edge, and one just under its upper edge: two in every bin
    const edges = [0, ...GAP_BINS_US.map((us) => us * 1000)];
    assert.deepEqual(gapHistogram([...edges, ...edges.slice(1).map((e) => e - 1), 10 * edges.at(-1)!]), [
      ...edges.map(() => 2).slice(0, -1),
      2,
    ]);
    assert.equal(summarizeTrace([], floor), null);
  });

  test('a step without kernels: all idle edges, busy 0, nothing recoverable', () => {
    const s = summarizeStep({ start_ns: 10, end_ns: 110, kernels: [kernel(200, 300)] }, 500);
    assert.deepEqual([s.busy_ns, s.kernels, s.gaps_ns.length, s.edge_idle_ns, s.recoverable_ns], [0, 0, 0, 100, 0]);
  });

  test("a rank's trace answer, through the protocol's schema, to the report's Trace section; nothing traced says why", () => {
    const floor = 600;
    const steps = [
      { start_ns: 0, end_ns: 100_000 },
      { start_ns: 200_000, end_ns: 300_000 },
    ];
    const kernels = steps.flatMap((st) =>
      Array.from({ length: 8 }, (_, i) => ({
        start_ns: st.start_ns + 2_000 + i * 9_000,
        end_ns: st.start_ns + 5_000 + i * 9_000,
        graph_id: 0,
        stream_id: 7,
      })),
    );
    const answer = OrchRankTraceSchema.parse({
      v: 1,
      type: 'trace',
      id: 'b0-a1-probe0',
      arm: 'eager',
      mode: 'eager',
      t_start_ns: 1,
      t_end_ns: 2,
      final: true,
      trace: {
        source: 'cupti',
        steps,
        kernels,
        graphs: [
          { graph_id: 4, exec_id: 9, nodes: 8, instantiate_ns: 150_000 },
          { graph_id: 4, exec_id: 10, nodes: 8, instantiate_ns: 170_000 },
        ],
        dropped: 0,
      },
    });
    const arm = traceArmOf('eager', [answer], { ns: floor });
    assert.deepEqual(
      arm.summary,
      summarizeTrace(
        steps.map((st) => ({
          ...st,
          kernels: kernels.filter((k) => k.start_ns >= st.start_ns && k.end_ns <= st.end_ns),
        })),
        floor,
      ),
    );
    assert.deepEqual(arm.graphs, [{ graph_id: 4, nodes: 8, instantiations: 2, instantiate_ns: 160_000 }]);
    const none = traceArmOf(
      'graph',
      [
        OrchRankTraceSchema.parse({
          v: 1,
          type: 'trace',
          id: 'b0-a1-probe1',
          arm: 'graph',
          mode: 'graph',
          t_start_ns: 1,
          t_end_ns: 2,
          final: true,
          trace: { source: 'none', reason: 'ORCH_INJECT_TRACE=1: CUPTI kernel activity could not be enabled' },
        }),
      ],
      { ns: floor },
    );
    const md = renderTrace([arm, none], {
      source: 'graphrt-chain',
      backend: 'cuda',
      device: 'NVIDIA H200',
      ns_per_node: floor + 200,
      node_cost: { ns: floor, kernel_busy_ns: 200 },
      reps: 3,
      gpu: true,
    });
    const s = arm.summary!;
    assert.match(
      md,
      new RegExp(
        `\\| eager \\| eager \\| 2 \\| ${(s.step_ns / 1000).toFixed(2)} \\| ${(s.busy_share * 100).toFixed(1)} % \\| 8 \\| 8 \\| ${(s.gaps_ns / 1000).toFixed(2)} \\| ${(s.graph_step_estimate_ns! / 1000).toFixed(2)} \\| ${(s.recoverable_ns! / 1000).toFixed(2)} `,
      ),
    );
    assert.match(
      md,
      /\| graph \| graph \| — \| — \| — \| — \| — \| — \| — \| — \| — \| not traced: ORCH_INJECT_TRACE=1: CUPTI kernel activity could not be enabled \|/,
    );
    assert.match(md, /\| eager \| 4 \| 8 \| 2 \| 160\.00 \|/);
    assert.throws(
      () =>
        OrchRankTraceSchema.parse({
          ...answer,
          trace: { source: 'cupti', steps: [], kernels: [], graphs: [], dropped: 0 },
        }),
      /steps/,
    );
  });
});
