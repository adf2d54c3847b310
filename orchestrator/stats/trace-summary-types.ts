/**
 * The trace probe's summary shapes (kernel-trace.ts, trace-arm.ts and trace-probe.ts compute them),
 * apart from the code so that types.ts's Analysis can name them without importing that code.
 */

export interface TraceSummary {
  steps: number;
  /** medians over the steps */
  step_ns: number;
  busy_share: number;
  /** the union of kernel intervals inside the step */
  busy_ns: number;
  kernels: number;
  graph_kernels: number;
  short_kernels: number;
  gaps_ns: number;
  edge_idle_ns: number;
  /** edge idle + busy + kernels × floor (kernel-trace.ts); this and the three below are null without a GPU floor */
  graph_step_estimate_ns: number | null;
  recoverable_ns: number | null;
  /** recoverable over the step time (medians of each step's ratio) */
  recoverable_share: number | null;
  /** the PDL upside per dependent kernel, over every step's dependent kernels (null: none) */
  pdl_upside_per_kernel_ns: number | null;
  floor_ns: number | null;
  histogram: number[];
}

export interface TracedGraphRow {
  graph_id: number;
  nodes: number;
  instantiations: number;
  /** median host time of an instantiation */
  instantiate_ns: number;
}

export interface TraceArm {
  arm: string;
  mode: string;
  /** null: nothing traced, for `reason` */
  summary: TraceSummary | null;
  reason?: string;
  /** a traced arm without a GPU floor: why its estimates are null */
  estimate_reason?: string;
  graphs: readonly TracedGraphRow[];
  dropped: number;
}

/** What the chain measured, as the report states it. */
export type TraceFloor =
  | {
      source: 'graphrt-chain';
      backend: 'cpu' | 'cuda';
      device: string;
      ns_per_node: number;
      /**
       * what a graph adds per node beyond its kernel's busy time (the floor less the chain's traced
       * busy time per kernel, graph-node-floor.ts nodeCostNs): what the estimates add per kernel
       */
      node_cost: { ns: number; kernel_busy_ns: number } | { reason: string };
      reps: number;
      gpu: boolean;
    }
  | { source: 'none'; reason: string };

export interface TraceProbeSummary {
  planned: number;
  /** planned trace reps without a committed record */
  missing: number;
  floor: TraceFloor;
  arms: TraceArm[];
  /** would a graph help, checked: the eager arm's estimate against the graph arm's traced step (null: no such pair) */
  graph_check: GraphCheck | null;
  pass: boolean;
  message: string;
}

/** The estimated graph step of an eager arm beside the step its graph arm took (both traced). */
export interface GraphCheck {
  eager_arm: string;
  graph_arm: string;
  estimate_ns: number;
  /** the graph arm's traced step: tracing adds 0.19-0.40 µs per node on the H200 (orch_inject.h) */
  measured_ns: number;
  /** estimate over measured */
  ratio: number;
  /** |ratio − 1| > GRAPH_CHECK_TOLERANCE */
  differs: boolean;
}
