/**
 * The probe report's "Trace" section for a command workload (orchestrator/stats/kernel-trace.ts
 * defines each number): per arm, is a step launch-bound (busy share, short kernels, gaps) and what
 * capture could win (the recoverable estimate beside the PDL upside); the gap histogram; each graph
 * the program instantiated; the floor the estimate used and where it was measured. An arm nothing
 * traced says why ("not traced: …"), never zeros.
 */
import { GAP_BINS_US } from '../stats/kernel-trace.ts';
import type { TraceArm } from '../stats/trace-arm.ts';
import type { TraceFloor } from '../stats/trace-probe.ts';
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
  return f.gpu ? `Graph-node floor: ${at}.` : `Graph-node floor: ${at}: graphrt's ${f.backend} backend, not a GPU floor, so no estimate uses it.`;
}

/** `headline`: the probe's outcome, first under the section's title. */
export function renderTrace(arms: readonly TraceArm[], floor: TraceFloor, headline?: string): string {
  if (arms.length === 0) return '';
  const summaryRow = (a: TraceArm): string[] => {
    const s = a.summary;
    if (s === null) return [a.arm, a.mode, '—', '—', '—', '—', '—', '—', '—', '—', `not traced: ${a.reason ?? 'no trace answer'}`];
    const pdl = s.pdl_upside_per_kernel_ns === null ? '—' : us(s.pdl_upside_per_kernel_ns);
    const lost = a.dropped > 0 ? `; ${a.dropped} records lost: busy share is a lower bound` : '';
    return [a.arm, a.mode, String(s.steps), us(s.step_ns), pct(s.busy_share), String(s.kernels), String(s.short_kernels), us(s.gaps_ns), `${us(s.recoverable_ns)} (${pct(s.recoverable_share)})`, pdl, `${us(s.floor_ns)} µs/node${lost}`];
  };
  const traced = arms.filter((a) => a.summary !== null);
  const histogram = markdownTable(['gap', ...traced.map((a) => a.arm)], GAP_BINS_US.map((_, i) => i).concat(GAP_BINS_US.length).map((i) => [binLabel(i), ...traced.map((a) => String(a.summary?.histogram[i] ?? 0))]));
  const graphs = arms.flatMap((a) => a.graphs.map((g) => [a.arm, String(g.graph_id), String(g.nodes), String(g.instantiations), us(g.instantiate_ns)]));
  return [
    '## Trace',
    '',
    ...(headline === undefined ? [] : [headline, '']),
    "Kernel activity traced by orch's injection library (CUPTI) in steps of their own, never a timed rep. Per step, the median over steps: the step time (µs), the device busy share (the union of kernel intervals over the step), kernels and those shorter than 5 µs, the idle gaps between kernels (Σ, µs), recoverable ≈ Σ gaps − kernels × the card's graph-node floor (measured by graphrt's chain on the card), and the PDL upside per dependent kernel (µs).",
    '',
    floorSentence(floor),
    '',
    markdownTable(['arm', 'mode', 'steps', 'step', 'busy', 'kernels', '< 5 µs', 'gaps', 'recoverable', 'PDL upside / kernel', 'floor'], arms.map(summaryRow)),
    '',
    ...(traced.length > 0 ? ['Gaps between kernels, over every traced step:', '', histogram, ''] : []),
    ...(graphs.length > 0 ? ['Graphs instantiated:', '', markdownTable(['arm', 'graph', 'nodes', 'instantiations', 'instantiate (µs, median)'], graphs), ''] : []),
  ].join('\n');
}
