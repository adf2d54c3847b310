/**
 * The trace probe's summary shapes (kernel-trace.ts, trace-arm.ts and trace-probe.ts compute them),
 * apart from the code so that types.ts's Analysis can name them without importing that code.
 */

export interface TraceSummary {
  steps: number;
  /** medians over the steps */
  step_ns: number;
  busy_share: number;
  kernels: number;
  graph_kernels: number;
  short_kernels: number;
  gaps_ns: number;
  edge_idle_ns: number;
  recoverable_ns: number;
  /** recoverable over the step time (medians of each step's ratio) */
  recoverable_share: number;
  /** the PDL upside per dependent kernel, over every step's dependent kernels (null: none) */
  pdl_upside_per_kernel_ns: number | null;
  floor_ns: number;
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
  graphs: readonly TracedGraphRow[];
  dropped: number;
}

/** What the chain measured, as the report states it. */
export type TraceFloor =
  | { source: 'graphrt-chain'; backend: 'cpu' | 'cuda'; device: string; ns_per_node: number; reps: number; gpu: boolean }
  | { source: 'none'; reason: string };

export interface TraceProbeSummary {
  planned: number;
  /** planned trace reps without a committed record */
  missing: number;
  floor: TraceFloor;
  arms: TraceArm[];
  pass: boolean;
  message: string;
}
