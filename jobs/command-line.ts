/**
 * The lines a command-workload rank answers with (worker/command/command-rank-runner.ts): the
 * command runtime's counterpart of the graphrt lines (jobs/graphrt-protocol.ts), shaped like them
 * so the block executor reads one kind of rank line. The user's own process prints metric lines
 * (jobs/metric-source.ts); each of its output lines reaches the event stream as an `output` line.
 */
import { z } from 'zod';
import { ChainFloorRunSchema } from './chain-floor-run.ts';
import {
  ErrorFrameSchema,
  LaunchCountsSchema,
  OrchRankHelloSchema,
  OrchRankTraceSchema,
  OtherBlockersSchema,
} from './orch-rank-protocol.ts';
import { PerRepLaunchCountsSchema } from './per-rep-counts.ts';
import { repLineCore } from './rep-line.ts';

const v = z.literal(1);
const count = z.int().min(0);

export const CommandHelloSchema = z.strictObject({
  v,
  type: z.literal('hello'),
  backend: z.literal('command'),
  pid: z.int().positive(),
  artifacts: z.array(z.string()),
  build: z
    .strictObject({
      key: z.string(),
      outcome: z.enum(['cached', 'shared', 'built']),
      wait_ms: z.number().min(0),
      build_ms: z.number().min(0).nullable(),
    })
    .nullable(),
  /** run.mode resident: the program's own hello (jobs/orch-rank-protocol.ts) */
  program: OrchRankHelloSchema.omit({ v: true, type: true, final: true }).optional(),
  /**
   * A resident rank's start: adopted from the host phase (its process started before the lease,
   * worker/command/prepared-slots.ts) or inside the lease (`why` not, when it was meant to be);
   * its build's compiler caches warm (held something) or cold (worker/command/rank-caches.ts);
   * adopted, how long the rank waited in its lease for that prepare() to end (worker's clock, ms).
   */
  started: z
    .strictObject({
      host_phase: z.boolean(),
      why: z.string().optional(),
      caches: z.enum(['warm', 'cold']),
      prepare_waited_ms: z.number().min(0).meta({ unit: 'ms' }).optional(),
    })
    .optional(),
  /** a resident rank's trace probe: graphrt's chain on the card before the program started (the graph-node floor) */
  graph_node_floor: ChainFloorRunSchema.optional(),
  /** Builds as arms: each build the block's arms run, by name (worker/builds/commit-build.ts). */
  builds: z
    .record(
      z.string(),
      z.strictObject({
        commit: z.string(),
        key: z.string(),
        outcome: z.enum(['cached', 'shared', 'built']),
        wait_ms: z.number().min(0),
        build_ms: z.number().min(0).nullable(),
      }),
    )
    .optional(),
  final: z.literal(true),
});
export type CommandHello = z.infer<typeof CommandHelloSchema>;

/**
 * A command workload's rep: the core every rep line has (jobs/rep-line.ts; `mode`: per_rep always
 * eager, orch cannot see into the process; resident: what the rank library saw) and its own fields.
 */
export const CommandRepSchema = z.strictObject({
  ...repLineCore,
  workload: z.literal('command'),
  backend: z.literal('command'),
  warmup: count,
  steps: z.int().positive(),
  /** finite numbers only: a metric that parsed to NaN is refused here, never committed */
  step_ms: z.array(z.number()),
  /** the step index of each value in step_ms */
  step_index: z.array(count),
  excluded: count,
  wall_ms: z.number().min(0),
  /** resident ranks (ranklib/PROTOCOL.md "rep"): the rest of what the program answered */
  /** per measured step: one hash over every output (jobs/output-hashes.ts) */
  hashes: z.array(z.string()).optional(),
  counters: z.record(z.string(), z.number()).optional(),
  /** resident: per step from the rank library; per_rep: the whole rep's, with the steps it is divided by */
  launches: z.union([LaunchCountsSchema, PerRepLaunchCountsSchema]).optional(),
  xid_events: z.int().min(0).optional(),
});
export type CommandRep = z.infer<typeof CommandRepSchema>;

/**
 * A resident rank's identity gate as the worker judged it (the program returns hashes and never
 * judges itself: jobs/output-hashes.ts compares them), shaped as graphrt's gate line.
 */
export const CommandGateSchema = z.strictObject({
  v,
  type: z.literal('gate'),
  id: z.string(),
  arm: z.string(),
  name: z.literal('identity'),
  backend: z.literal('command'),
  pass: z.boolean(),
  mode: z.enum(['graph', 'eager']),
  replays: z.int().positive(),
  first_bad_replay: z.int().positive().nullable(),
  /** the first output (by the program's order) that differs at first_bad_replay */
  first_bad_output: z.string().nullable(),
  eager_hashes: z.array(z.string()),
  graph_hashes: z.array(z.string()),
  nodes: z.null(),
  /** the program's counters.launches_per_step, if it reports one */
  launches_per_step: count.nullable(),
  t_start_ns: z.number().min(0).optional(),
  t_end_ns: z.number().min(0).optional(),
  final: z.literal(true),
});
export type CommandGate = z.infer<typeof CommandGateSchema>;

/** A resident rank's answer to a trace probe's `trace` request, as the program gave it (ranklib/PROTOCOL.md "trace"). */
export const CommandTraceSchema = OrchRankTraceSchema;
export type CommandTrace = z.infer<typeof CommandTraceSchema>;

/** One line the user's process printed, as the event stream carries it. */
export const CommandOutputSchema = z.strictObject({
  v,
  type: z.literal('output'),
  id: z.string(),
  stream: z.enum(['stdout', 'stderr']),
  line: z.string(),
});
export type CommandOutput = z.infer<typeof CommandOutputSchema>;

/** `code` is an OrchError code (METRIC_NO_LINES, COMMAND_FAILED, RANK_LINE_TOO_LONG...). */
export const CommandErrorSchema = z.strictObject({
  v,
  type: z.literal('error'),
  id: z.string(),
  code: z.string().min(1),
  message: z.string().min(1),
  /** a resident program's error: the user's own source line (jobs/orch-rank-protocol.ts ErrorFrameSchema) */
  frame: ErrorFrameSchema.optional(),
  /** CAPTURE_FAILED of a resident program: its other capture blockers (jobs/orch-rank-protocol.ts) */
  other_blockers: OtherBlockersSchema.optional(),
  final: z.literal(true),
});
export type CommandError = z.infer<typeof CommandErrorSchema>;

export const CommandLineSchema = z.discriminatedUnion('type', [
  CommandHelloSchema,
  CommandRepSchema,
  CommandGateSchema,
  CommandTraceSchema,
  CommandOutputSchema,
  CommandErrorSchema,
]);
export type CommandLine = z.infer<typeof CommandLineSchema>;
