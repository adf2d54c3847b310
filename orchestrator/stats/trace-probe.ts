/**
 * The trace probe of a resident command rank (design probe, `kind: trace` records): per arm what
 * the traced steps say (trace-arm.ts), against the card's graph-node floor that graphrt's chain
 * measured on the same cards in the same probe (graph-node-floor.ts). A floor measured on a cpu
 * card is graphrt's host emulation, not a GPU's: it is reported as such and never used for an
 * estimate. The probe passes when every planned trace rep committed; an arm the library could not
 * trace (no GPU, no injection library) is "not traced" with its reason, never zeros.
 */
import type { ChainFloorRun } from '../../jobs/chain-floor-run.ts';
import type { ProbeRecord } from '../../jobs/probe-record.ts';
import { graphNodeFloorNs, nodeCostNs } from './graph-node-floor.ts';
import { type FloorForEstimate, traceArmOf } from './trace-arm.ts';
import type { GraphCheck, TraceArm, TraceFloor, TraceProbeSummary } from './trace-summary-types.ts';

export type { GraphCheck, TraceFloor, TraceProbeSummary } from './trace-summary-types.ts';

/** Estimate and measured graph step further apart than this are said to differ (issue's target: 10 %). */
export const GRAPH_CHECK_TOLERANCE = 0.1;

/**
 * Would a graph help, checked against the probe's own graph arm: the first eager arm's estimate
 * (edge idle + busy + kernels × floor, kernel-trace.ts) beside the first graph arm's traced step. Null without
 * an estimate or without a traced graph arm.
 */
export function graphCheckOf(arms: readonly TraceArm[]): GraphCheck | null {
  const eager = arms.find((a) => a.mode === 'eager' && a.summary?.graph_step_estimate_ns != null);
  const graph = arms.find((a) => a.mode === 'graph' && a.summary !== null);
  const estimate = eager?.summary?.graph_step_estimate_ns;
  const measured = graph?.summary?.step_ns;
  if (eager === undefined || graph === undefined || estimate == null || measured === undefined || measured <= 0)
    return null;
  const ratio = estimate / measured;
  return {
    eager_arm: eager.arm,
    graph_arm: graph.arm,
    estimate_ns: estimate,
    measured_ns: measured,
    ratio,
    differs: Math.abs(ratio - 1) > GRAPH_CHECK_TOLERANCE,
  };
}

/** The floor over every rank's chain run (the median of their reps); the first reason when none ran. */
export function traceFloorOf(runs: readonly ChainFloorRun[]): TraceFloor {
  const measured = runs.flatMap((r) => (r.source === 'graphrt-chain' ? [r] : []));
  const first = measured[0];
  if (first === undefined) {
    const none = runs.find((r) => r.source === 'none');
    return { source: 'none', reason: none?.source === 'none' ? none.reason : 'no chain run reached the probe record' };
  }
  const reps = measured.flatMap((r) => r.reps);
  const backend = measured.every((r) => r.backend === 'cuda') ? 'cuda' : 'cpu';
  const ns_per_node = graphNodeFloorNs(reps);
  return {
    source: 'graphrt-chain',
    backend,
    device: first.device,
    ns_per_node,
    node_cost: nodeCostNs(
      ns_per_node,
      measured.map((r) => r.kernel),
    ),
    reps: reps.length,
    gpu: backend === 'cuda',
  };
}

/** What the estimates add per kernel: what a graph adds per node beyond its kernel's busy time. */
function floorForEstimate(f: TraceFloor): FloorForEstimate {
  if (f.source === 'none') return { reason: f.reason };
  if (!f.gpu) return { reason: `the chain ran on graphrt's ${f.backend} backend (${f.device}): not a GPU floor` };
  return 'ns' in f.node_cost ? { ns: f.node_cost.ns } : { reason: f.node_cost.reason };
}

/**
 * `blocked`: the arms whose capture failed in the program (a capture blocker, jobs/capture-blocker.ts),
 * each with why: such an arm is not traced for that reason, and its reps are not missing ones.
 */
export function summarizeTraceProbe(
  planned: number,
  armOrder: readonly string[],
  records: readonly ProbeRecord[],
  blocked: ReadonlyMap<string, string> = new Map(),
): TraceProbeSummary {
  const traced = records.filter((r) => r.kind === 'trace');
  // one chain run per rank process: every record of its block attempt carries it
  const runs = new Map<string, ChainFloorRun>();
  for (const r of traced)
    for (const k of r.ranks) if (k.floor !== undefined) runs.set(`${r.block}/${r.attempt}/${k.card}`, k.floor);
  const floor = traceFloorOf([...runs.values()]);
  const estimate = floorForEstimate(floor);
  const arms = armOrder.map((arm) => {
    const a = traceArmOf(
      arm,
      traced
        .filter((r) => r.arm === arm)
        .flatMap((r) => r.ranks.flatMap((k) => (k.trace === undefined ? [] : [k.trace]))),
      estimate,
    );
    const why = blocked.get(arm);
    return a.summary === null && why !== undefined ? { ...a, reason: why } : a;
  });
  const missing = Math.max(0, planned - traced.length);
  const notTraced = arms.filter((a) => a.summary === null);
  const graph_check = graphCheckOf(arms);
  const pass = traced.length > 0 && missing === 0;
  const what =
    notTraced.length === 0
      ? 'every arm traced'
      : notTraced.length === arms.length
        ? `not traced: ${notTraced[0]?.reason ?? 'no trace answer'}`
        : `${notTraced.length} of ${arms.length} arms not traced`;
  const message =
    traced.length === 0
      ? `no trace record committed (${planned} planned)`
      : missing > 0
        ? `${traced.length} of ${planned} planned trace reps committed; ${what}`
        : `${traced.length} trace rep(s) committed; ${what}`;
  return { planned, missing, floor, arms, graph_check, pass, message };
}
