/**
 * The card's graph-node floor: what one node of a captured graph costs on this card when its
 * kernel does nearly nothing, measured by graphrt's chain workload (native/PROTOCOL.md
 * "Workloads": `kernels` launches per step of `x -> ±x + b`) in graph mode. The trace probe's
 * recoverable-time estimate (kernel-trace.ts) subtracts it per kernel; it differs by card, driver
 * and launch state (0.07-0.64 µs per node on the H200, native/BENCHMARKS.md), so it is measured,
 * never written down.
 *
 * A chain node's time is the time its kernel keeps the card busy plus what the graph adds per node
 * (the dependency's resolution and the next kernel's start). A user's traced busy time already holds
 * the first for each of its kernels, so the estimate adds per node only the second: the floor less
 * the chain's busy time per kernel, which one traced eager chain rep gives (worker/command/chain-floor.ts),
 * measured as the user's busy is, the union of the traced kernels' intervals. On the H200 the whole
 * floor counted each kernel's busy time twice: estimates came out 10-21 % above the measured graph
 * step of three programs, (measured − busy) ÷ kernels being 0.45-0.51 µs against a 0.95 µs floor
 * (bench/h200/runs/2026-12-04/truth2-run2.txt). The traced rep runs eager, as the user's busy is
 * measured on its eager arm: traced inside a graph, a chain kernel's own start-to-end (0.99 µs)
 * exceeded the untraced node (0.91 µs), and the union of their intervals covered 0.951 µs of each
 * 0.963 µs node, CUPTI's interval of a graph node reaching over the gap before it
 * (bench/h200/runs/2026-12-04c).
 */
import { median } from './descriptive.ts';

export interface ChainGraphRep {
  /** the rep's measured step times, ms */
  step_ms: readonly number[];
  mode: 'graph' | 'eager';
  /** graph nodes per step (graphrt's `nodes` of a graph rep) */
  nodes: number | null | undefined;
}

/** ns per graph node: the median over the reps of each rep's median step over its nodes. */
export function graphNodeFloorNs(reps: readonly ChainGraphRep[]): number {
  const perRep = reps.map((r, i) => {
    if (r.mode !== 'graph') throw new Error(`chain rep ${i} ran ${r.mode}: the graph-node floor is a graph rep's`);
    if (r.nodes === null || r.nodes === undefined || r.nodes <= 0)
      throw new Error(`chain rep ${i} has no node count: the floor is the step over its nodes`);
    if (r.step_ms.length === 0) throw new Error(`chain rep ${i} has no measured steps`);
    return (median(r.step_ms) * 1e6) / r.nodes;
  });
  if (perRep.length === 0)
    throw new Error('no chain graph rep: the graph-node floor is measured on the card, never assumed');
  return median(perRep);
}

/**
 * What a graph adds per node beyond its kernel's busy time: the floor (ns per node) less the chain's
 * traced busy time per kernel (the median over the runs that traced it), or why there is none.
 */
export function nodeCostNs(
  floorNs: number,
  kernels: readonly ({ ns: number } | { reason: string } | undefined)[],
): { ns: number; kernel_busy_ns: number } | { reason: string } {
  const traced = kernels.flatMap((k) => (k !== undefined && 'ns' in k ? [k.ns] : []));
  if (traced.length === 0) {
    const why = kernels.find((k) => k !== undefined && 'reason' in k);
    return {
      reason: `the chain's busy time per kernel was not traced${why !== undefined && 'reason' in why ? `: ${why.reason}` : ' (a record made before it was)'}`,
    };
  }
  const kernel = median(traced);
  // Negative where tracing lengthens a kernel by more than a graph adds per node: the H100 traced
  // the chain's kernels at 1.081 µs each against 0.983 µs a graph node, and the CUDA example's graph
  // step came out 0.122 µs a node under its traced eager busy time, the chain's −0.098 within
  // 0.03 µs of it (bench/h200/runs/2026-12-05b/graph-variants-h100.txt). The same per-kernel correction
  // then holds for the user's traced busy time. Only a traced kernel longer than twice its node
  // says the trace was not the chain's own (a rep disturbed), and gives no estimate.
  if (kernel >= 2 * floorNs)
    return {
      reason: `the chain's kernels kept the card busy ${(kernel / 1000).toFixed(3)} µs each, traced, twice or more the ${(floorNs / 1000).toFixed(3)} µs per node of its graph: the trace is not comparable to the graph`,
    };
  return { ns: floorNs - kernel, kernel_busy_ns: kernel };
}
