/**
 * The card's graph-node floor: what one node of a captured graph costs on this card when its
 * kernel does nearly nothing, measured by graphrt's chain workload (native/PROTOCOL.md
 * "Workloads": `kernels` launches per step of `x -> ±x + b`) in graph mode. The trace probe's
 * recoverable-time estimate (kernel-trace.ts) subtracts it per kernel; it differs by card, driver
 * and launch state (0.07-0.64 µs per node on the H200, native/BENCHMARKS.md), so it is measured,
 * never written down.
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
