/**
 * The card's graph-node floor: what one node of a captured graph costs on this card when its
 * kernel does nearly nothing, measured by graphrt's chain workload (native/PROTOCOL.md
 * "Workloads": `kernels` launches per step of `x -> ±x + b`) in graph mode. The trace probe's
 * recoverable-time estimate (kernel-trace.ts) subtracts it per kernel; it differs by card, driver
 * and launch state (0.07-0.64 µs per node on the H200, native/BENCHMARKS.md), so it is measured,
 * never written down.
 *
 * A chain node's time is the chain kernel's own run time plus what the graph adds per node (the
 * dependency's resolution and the next kernel's start). A user's traced busy time already holds each
 * of its kernels' run time, so the estimate adds per node only the second: the floor less the chain
 * kernel's run time, which one traced chain rep gives (worker/command/chain-floor.ts). On the H200
 * the whole floor counted the kernel twice: estimates came out 10-21 % above the measured graph step
 * of three programs, (measured − busy) ÷ kernels being 0.45-0.51 µs against a 0.95 µs floor
 * (bench/h200/runs/2026-12-04/truth2-run2.txt).
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
 * What a graph adds per node beyond its kernel's run time: the floor (ns per node) less the chain
 * kernel's traced run time (the median over the runs that traced it), or why there is none.
 */
export function nodeCostNs(
  floorNs: number,
  kernels: readonly ({ ns: number } | { reason: string } | undefined)[],
): { ns: number } | { reason: string } {
  const traced = kernels.flatMap((k) => (k !== undefined && 'ns' in k ? [k.ns] : []));
  if (traced.length === 0) {
    const why = kernels.find((k) => k !== undefined && 'reason' in k);
    return {
      reason: `the chain kernel's own run time was not traced${why !== undefined && 'reason' in why ? `: ${why.reason}` : ' (a record made before it was)'}`,
    };
  }
  const kernel = median(traced);
  if (kernel >= floorNs)
    return {
      reason: `the chain kernel ran ${(kernel / 1000).toFixed(3)} µs traced, not less than the ${(floorNs / 1000).toFixed(3)} µs per node of its graph: nothing left for what a graph adds`,
    };
  return { ns: floorNs - kernel };
}
