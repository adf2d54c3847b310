/**
 * The probe report's "Trace" section for a command workload (orchestrator/stats/kernel-trace.ts
 * defines each number): per arm, is a step launch-bound (busy share, short kernels, gaps) and what
 * capture could win (the recoverable estimate beside the PDL upside); the gap histogram; each graph
 * the program instantiated; the floor the estimate used and where it was measured. An arm nothing
 * traced says why ("not traced: …"), never zeros.
 */
import { GAP_BINS_US } from '../stats/kernel-trace.ts';
import type { TraceArm } from '../stats/trace-arm.ts';
import { GRAPH_CHECK_TOLERANCE, type GraphCheck, type TraceFloor } from '../stats/trace-probe.ts';
import { markdownText } from './markdown-code.ts';
import { markdownTable } from './markdown-table.ts';

const us = (ns: number) => (ns / 1000).toFixed(2);
const pct = (x: number) => `${(x * 100).toFixed(1)} %`;

function binLabel(i: number): string {
  const low = i === 0 ? 0 : GAP_BINS_US[i - 1];
  return i < GAP_BINS_US.length ? `${low}–${GAP_BINS_US[i]} µs` : `≥ ${low} µs`;
}

/** The sentence that says which floor the estimates used, or why there is none. */
export function floorSentence(f: TraceFloor): string {
  if (f.source === 'none') return `Graph-node floor: not available (${f.reason}).`;
  const at = `${us(f.ns_per_node)} µs per node, measured by graphrt's chain on ${f.device} (${f.reps} graph reps)`;
  if (!f.gpu)
    return `Graph-node floor: ${at}: graphrt's ${f.backend} backend, not a GPU floor, so no estimate uses it.`;
  if (!('ns' in f.node_cost)) return `Graph-node floor: ${at}; no estimate: ${f.node_cost.reason}.`;
  const traced = `the chain's kernels kept the card busy ${us(f.node_cost.kernel_busy_ns)} µs each (traced)`;
  return f.node_cost.ns >= 0
    ? `Graph-node floor: ${at}; ${traced}, so a graph adds ${us(f.node_cost.ns)} µs per node beyond its kernels' busy time: the estimates add that per kernel.`
    : `Graph-node floor: ${at}; ${traced}, longer than a node of its graph: tracing lengthens a kernel by ${us(-f.node_cost.ns)} µs more than a graph adds per node, so the estimates take that off the traced busy time per kernel.`;
}

/** Would a graph help, checked: the eager arm's estimate beside the graph arm's traced step. */
export function graphCheckSentence(c: GraphCheck | null): string {
  if (c === null)
    return 'Would a graph help: no check (it needs a GPU floor, a traced eager arm and a traced graph arm).';
  const head = `Would a graph help: ${c.eager_arm}'s graph step estimated ${us(c.estimate_ns)} µs (idle at the step's edges + busy + kernels × what a graph adds per node), ${c.graph_arm} measured ${us(c.measured_ns)} µs under tracing: ratio ${c.ratio.toFixed(3)}`;
  if (!c.differs) return `${head}, within ${GRAPH_CHECK_TOLERANCE * 100} %.`;
  const why =
    c.ratio > 1
      ? 'the estimate is higher: the graph overlaps more than one floor per node, or the eager arm runs work its graph does not'
      : "the estimate is lower: the graph arm's step pays what the eager arm's busy time does not show (a node of a program's kernels can cost more than graphrt's chain node, whose cost the estimate adds; tracing adds time per graph node; host work inside the step; or a graph that launches more than the eager arm)";
  return `${head}: they differ by more than ${GRAPH_CHECK_TOLERANCE * 100} % (${why}).`;
}

/** `headline`: the probe's outcome, first under the section's title. */
export function renderTrace(
  arms: readonly TraceArm[],
  floor: TraceFloor,
  headline?: string,
  check?: GraphCheck | null,
): string {
  if (arms.length === 0) return '';
  const orDash = (ns: number | null, f: (ns: number) => string = us) => (ns === null ? '—' : f(ns));
  const summaryRow = (a: TraceArm): string[] => {
    const s = a.summary;
    if (s === null)
      return [
        a.arm,
        a.mode,
        '—',
        '—',
        '—',
        '—',
        '—',
        '—',
        '—',
        '—',
        '—',
        `not traced: ${markdownText(a.reason ?? 'no trace answer')}`,
      ];
    const pdl = orDash(s.pdl_upside_per_kernel_ns);
    const lost = a.dropped > 0 ? `; ${a.dropped} records lost: busy share is a lower bound` : '';
    const recoverable =
      s.recoverable_ns === null || s.recoverable_share === null
        ? '—'
        : `${us(s.recoverable_ns)} (${pct(s.recoverable_share)})`;
    const floorCell =
      s.floor_ns === null ? `no estimate: ${a.estimate_reason ?? 'no floor'}` : `${us(s.floor_ns)} µs/node`;
    return [
      a.arm,
      a.mode,
      String(s.steps),
      us(s.step_ns),
      pct(s.busy_share),
      String(s.kernels),
      String(s.short_kernels),
      us(s.gaps_ns),
      orDash(s.graph_step_estimate_ns),
      recoverable,
      pdl,
      `${floorCell}${lost}`,
    ];
  };
  const traced = arms.filter((a) => a.summary !== null);
  const histogram = markdownTable(
    ['gap', ...traced.map((a) => a.arm)],
    GAP_BINS_US.map((_, i) => i)
      .concat(GAP_BINS_US.length)
      .map((i) => [binLabel(i), ...traced.map((a) => String(a.summary?.histogram[i] ?? 0))]),
  );
  const graphs = arms.flatMap((a) =>
    a.graphs.map((g) => [a.arm, String(g.graph_id), String(g.nodes), String(g.instantiations), us(g.instantiate_ns)]),
  );
  return [
    '## Trace',
    '',
    ...(headline === undefined ? [] : [headline, '']),
    "Kernel activity traced by orch's injection library (CUPTI) in steps of their own, never a timed rep. Per step, the median over steps: the step time (µs), the device busy share (the union of kernel intervals over the step), kernels and those shorter than 5 µs, the idle gaps between kernels (Σ, µs); then, against the floor (what a graph adds per node beyond its kernel's run time: the card's graph-node floor, measured by graphrt's chain on the card, less the chain's traced busy time per kernel; none on a card without a GPU floor): the graph step ≈ idle at the step's edges + device busy + kernels × floor (µs; of host time only the edges, which a graph keeps — staging, the launch — since tracing inflates the host time between kernels), recoverable ≈ Σ gaps − kernels × floor, and the PDL upside per dependent kernel (µs).",
    '',
    floorSentence(floor),
    '',
    markdownTable(
      [
        'arm',
        'mode',
        'steps',
        'step',
        'busy',
        'kernels',
        '< 5 µs',
        'gaps',
        'graph step est.',
        'recoverable',
        'PDL upside / kernel',
        'floor',
      ],
      arms.map(summaryRow),
    ),
    '',
    ...(check === undefined ? [] : [graphCheckSentence(check), '']),
    ...(traced.length > 0 ? ['Gaps between kernels, over every traced step:', '', histogram, ''] : []),
    ...(graphs.length > 0
      ? [
          'Graphs instantiated:',
          '',
          markdownTable(['arm', 'graph', 'nodes', 'instantiations', 'instantiate (µs, median)'], graphs),
          '',
        ]
      : []),
  ].join('\n');
}
