/**
 * One arm of a trace probe from its ranks' `trace` answers (ranklib/PROTOCOL.md "trace"): every
 * traced step summarised together (kernel-trace.ts), the graphs the program instantiated grouped
 * by graph, the records lost counted; an arm no answer traced says why, and a traced arm without a
 * GPU floor is summarised all the same, its estimates null with the reason.
 */
import type { OrchRankTrace } from '../../jobs/orch-rank-protocol.ts';
import { median } from './descriptive.ts';
import { stepsOfTrace, summarizeTrace } from './kernel-trace.ts';
import type { TraceArm, TracedGraphRow } from './trace-summary-types.ts';

export type { TraceArm, TracedGraphRow } from './trace-summary-types.ts';

/** The card's graph-node floor in ns, or why there is none to estimate against (never a stand-in number). */
export type FloorForEstimate = { ns: number } | { reason: string };

export function traceArmOf(arm: string, answers: readonly OrchRankTrace[], floor: FloorForEstimate): TraceArm {
  const mode = [...new Set(answers.map((a) => a.mode))].join(', ');
  const steps = answers.flatMap((a) => stepsOfTrace(a) ?? []);
  const none = answers.map((a) => a.trace).find((t) => t.source === 'none');
  const traced = answers.flatMap((a) => (a.trace.source === 'cupti' ? [a.trace] : []));
  const byGraph = new Map<number, { nodes: number; times: number[] }>();
  for (const g of traced.flatMap((t) => t.graphs)) {
    const seen = byGraph.get(g.graph_id) ?? { nodes: g.nodes, times: [] };
    seen.times.push(g.instantiate_ns);
    byGraph.set(g.graph_id, seen);
  }
  const graphs: TracedGraphRow[] = [...byGraph].map(([graph_id, g]) => ({
    graph_id,
    nodes: g.nodes,
    instantiations: g.times.length,
    instantiate_ns: median(g.times),
  }));
  // busy share, kernels and gaps need no floor: only the estimates wait for one
  const summary = summarizeTrace(steps, 'ns' in floor ? floor.ns : null);
  const reason = none?.source === 'none' ? none.reason : 'no trace answer';
  return {
    arm,
    mode,
    summary,
    ...(summary === null ? { reason } : {}),
    ...(summary !== null && 'reason' in floor
      ? { estimate_reason: `no graph-node floor to estimate against: ${floor.reason}` }
      : {}),
    graphs,
    dropped: traced.reduce((n, t) => n + t.dropped, 0),
  };
}
