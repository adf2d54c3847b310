/**
 * Is the program launch-bound? The trace probe's answer (issue: device truth, trace mode): from the
 * kernel intervals orch's injection library traced (native/inject trace mode) inside each step the
 * rank library delimited, per step the device busy share (the union of the kernel intervals over
 * the step: kernels of two streams that overlap count once), the idle gaps between busy stretches,
 * the kernels shorter than SHORT_KERNEL_NS — none of which needs a floor — and the estimates a user
 * came for, which do:
 *
 *   graph step ≈ idle at the step's edges + device busy + kernels × the floor
 *   recoverable ≈ Σ gaps inside the step − kernels × the floor
 *
 * (so the estimate is the traced step less what is recoverable: step = edges + busy + Σ gaps)
 * where "the floor" is what a graph adds per node beyond its kernel's busy time (a graph still pays
 * it per node: capture can win the rest of each gap, never more): the card's graph-node floor,
 * measured on the card by graphrt's chain, less the chain kernel's own traced run time
 * (graph-node-floor.ts nodeCostNs), never a constant: busy already holds each kernel's own. The
 * graph step is estimated from device time and the step's edges only: the tracer inflates host
 * time, and with it the gaps (42 ms of gaps inside a 15.7 ms untraced eager step of a bf16 decode on
 * the H200), so an estimate from the untraced step less the traced gaps came out negative there.
 * The edges stay in a graph step as orch times it (each step synchronized): the host time before
 * the step's first kernel and after its last — staging an input, a Python wrapper, the launch
 * itself — which a graph does not remove. Without them the estimate fell 16 % and 15 % short of
 * the PyTorch example's and a transformers Llama's graph steps on the H100, whose steps stage a
 * token and replay from Python; with them all three programs came within 5 %
 * (bench/h200/runs/2026-12-05c/truth2-h100.txt; bench/h200/user-rank/truth2.sh checks the estimate
 * against the graph step measured untraced). The
 * PDL upside: a dependent kernel (one that starts after its stream's previous kernel ended) can
 * hide at most the gap before it, and at most one floor of it once captured; their sum.
 * The idle time before the step's first kernel and after its last is host time the step spends
 * around its launches: reported apart (`edge_idle_ns`), not counted as recoverable.
 */

import type { OrchRankTrace } from '../../jobs/orch-rank-protocol.ts';
import { median } from './descriptive.ts';
import type { TraceSummary } from './trace-summary-types.ts';

export type { TraceSummary } from './trace-summary-types.ts';

export interface Interval {
  start_ns: number;
  end_ns: number;
}

export interface TracedKernel extends Interval {
  /** CUPTI's id of the graph that launched it; 0: launched on its own */
  graph_id: number;
  stream_id: number;
}

export interface TracedStep extends Interval {
  kernels: readonly TracedKernel[];
}

/** The kernels the issue calls short: a launch costs about as much as they run (3.9-4.4 µs per eager launch on the H200). */
export const SHORT_KERNEL_NS = 5_000;

export interface StepTrace {
  duration_ns: number;
  busy_ns: number;
  busy_share: number;
  kernels: number;
  /** kernels launched by a graph */
  graph_kernels: number;
  short_kernels: number;
  /** idle stretches between busy stretches, in order */
  gaps_ns: number[];
  edge_idle_ns: number;
  /** null without a floor, as the two below */
  graph_step_estimate_ns: number | null;
  recoverable_ns: number | null;
  dependent_kernels: number;
  pdl_upside_ns: number | null;
}

/** The union of `intervals` clipped to [from, to], as sorted disjoint intervals. */
export function unionWithin(intervals: readonly Interval[], from: number, to: number): Interval[] {
  const clipped = intervals
    .map((i) => ({ start_ns: Math.max(i.start_ns, from), end_ns: Math.min(i.end_ns, to) }))
    .filter((i) => i.end_ns > i.start_ns)
    .sort((a, b) => a.start_ns - b.start_ns);
  const out: Interval[] = [];
  for (const i of clipped) {
    const last = out.at(-1);
    if (last !== undefined && i.start_ns <= last.end_ns) last.end_ns = Math.max(last.end_ns, i.end_ns);
    else out.push({ ...i });
  }
  return out;
}

/** The idle stretches between consecutive busy intervals (sorted, disjoint). */
export function gapsBetween(busy: readonly Interval[]): number[] {
  return busy.slice(1).map((b, i) => b.start_ns - (busy[i] as Interval).end_ns);
}

/** One step's trace; `floorNs`: the card's graph-node floor (null: none, so no estimate). */
export function summarizeStep(step: TracedStep, floorNs: number | null): StepTrace {
  const inside = step.kernels.filter((k) => k.end_ns > step.start_ns && k.start_ns < step.end_ns);
  const busy = unionWithin(inside, step.start_ns, step.end_ns);
  const busy_ns = busy.reduce((s, b) => s + b.end_ns - b.start_ns, 0);
  const gaps_ns = gapsBetween(busy);
  const duration_ns = step.end_ns - step.start_ns;
  const edge_idle_ns =
    busy.length === 0
      ? duration_ns
      : (busy[0] as Interval).start_ns - step.start_ns + step.end_ns - (busy.at(-1) as Interval).end_ns;
  const sumGaps = gaps_ns.reduce((s, g) => s + g, 0);
  const pdl = dependentGaps(inside);
  return {
    duration_ns,
    busy_ns,
    busy_share: duration_ns > 0 ? busy_ns / duration_ns : 0,
    kernels: inside.length,
    graph_kernels: inside.filter((k) => k.graph_id !== 0).length,
    short_kernels: inside.filter((k) => k.end_ns - k.start_ns < SHORT_KERNEL_NS).length,
    gaps_ns,
    edge_idle_ns,
    // a negative cost (tracing lengthens a kernel more than a graph adds per node) lowers the
    // estimate; what capture or PDL can win is never more than the gaps, and never less than none
    graph_step_estimate_ns: floorNs === null ? null : edge_idle_ns + busy_ns + inside.length * floorNs,
    recoverable_ns: floorNs === null ? null : Math.max(0, sumGaps - inside.length * Math.max(floorNs, 0)),
    dependent_kernels: pdl.length,
    pdl_upside_ns: floorNs === null ? null : pdl.reduce((s, g) => s + Math.min(g, Math.max(floorNs, 0)), 0),
  };
}

/** For each kernel that starts after its stream's previous kernel ended: the gap before it. */
function dependentGaps(kernels: readonly TracedKernel[]): number[] {
  const byStream = new Map<number, TracedKernel[]>();
  for (const k of kernels) byStream.set(k.stream_id, [...(byStream.get(k.stream_id) ?? []), k]);
  const gaps: number[] = [];
  for (const list of byStream.values()) {
    const sorted = [...list].sort((a, b) => a.start_ns - b.start_ns);
    sorted.slice(1).forEach((k, i) => {
      const gap = k.start_ns - (sorted[i] as TracedKernel).end_ns;
      if (gap >= 0) gaps.push(gap);
    });
  }
  return gaps;
}

/** Upper edges (µs) of the gap histogram's bins; the last bin is open. */
export const GAP_BINS_US = [1, 2, 5, 10, 20, 50, 100, 1000] as const;

/** How many gaps fall in each bin of GAP_BINS_US (one more bin: ≥ the last edge). */
export function gapHistogram(gapsNs: readonly number[]): number[] {
  const counts = Array.from({ length: GAP_BINS_US.length + 1 }, () => 0);
  for (const g of gapsNs) {
    const bin = GAP_BINS_US.findIndex((edge) => g < edge * 1000);
    counts[bin === -1 ? GAP_BINS_US.length : bin]! += 1;
  }
  return counts;
}

/** Every traced step of one arm, summarised (null without a step); the estimates null without a floor. */
export function summarizeTrace(steps: readonly TracedStep[], floorNs: number | null): TraceSummary | null {
  if (steps.length === 0) return null;
  const each = steps.map((s) => summarizeStep(s, floorNs));
  const med = (f: (s: StepTrace) => number) => median(each.map(f));
  const withFloor = (f: (s: StepTrace) => number | null) => (floorNs === null ? null : med((s) => f(s) ?? 0));
  const dependent = each.reduce((n, s) => n + s.dependent_kernels, 0);
  return {
    steps: each.length,
    step_ns: med((s) => s.duration_ns),
    busy_share: med((s) => s.busy_share),
    busy_ns: med((s) => s.busy_ns),
    kernels: med((s) => s.kernels),
    graph_kernels: med((s) => s.graph_kernels),
    short_kernels: med((s) => s.short_kernels),
    gaps_ns: med((s) => s.gaps_ns.reduce((a, g) => a + g, 0)),
    edge_idle_ns: med((s) => s.edge_idle_ns),
    graph_step_estimate_ns: withFloor((s) => s.graph_step_estimate_ns),
    recoverable_ns: withFloor((s) => s.recoverable_ns),
    recoverable_share: withFloor((s) => (s.duration_ns > 0 ? (s.recoverable_ns ?? 0) / s.duration_ns : 0)),
    pdl_upside_per_kernel_ns:
      floorNs === null || dependent === 0 ? null : each.reduce((n, s) => n + (s.pdl_upside_ns ?? 0), 0) / dependent,
    floor_ns: floorNs,
    histogram: gapHistogram(each.flatMap((s) => s.gaps_ns)),
  };
}

/** A rank's trace answer as steps, each with the kernels that ran inside it (null: nothing was traced). */
export function stepsOfTrace(answer: OrchRankTrace): TracedStep[] | null {
  const t = answer.trace;
  if (t.source === 'none') return null;
  return t.steps.map((s) => ({
    ...s,
    kernels: t.kernels.filter((k) => k.end_ns > s.start_ns && k.start_ns < s.end_ns),
  }));
}
