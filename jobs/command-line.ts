/**
 * The lines a command-workload rank answers with (worker/command/command-rank-runner.ts): the
 * command runtime's counterpart of the graphrt lines (jobs/graphrt-protocol.ts), shaped like them
 * so the block executor reads one kind of rank line. The user's own process prints metric lines
 * (jobs/metric-source.ts); each of its output lines reaches the event stream as an `output` line.
 */
import { z } from 'zod';

const v = z.literal(1);
const count = z.int().min(0);

export const CommandHelloSchema = z.strictObject({
  v,
  type: z.literal('hello'),
  backend: z.literal('command'),
  pid: z.int().positive(),
  artifacts: z.array(z.string()),
  build: z
    .strictObject({ key: z.string(), outcome: z.enum(['cached', 'shared', 'built']), wait_ms: z.number().min(0), build_ms: z.number().min(0).nullable() })
    .nullable(),
  /** Builds as arms: each build the block's arms run, by name (worker/builds/commit-build.ts). */
  builds: z
    .record(z.string(), z.strictObject({ commit: z.string(), key: z.string(), outcome: z.enum(['cached', 'shared', 'built']), wait_ms: z.number().min(0), build_ms: z.number().min(0).nullable() }))
    .optional(),
  final: z.literal(true),
});
export type CommandHello = z.infer<typeof CommandHelloSchema>;

export const CommandRepSchema = z.strictObject({
  v,
  type: z.literal('rep'),
  id: z.string(),
  arm: z.string(),
  workload: z.literal('command'),
  backend: z.literal('command'),
  mode: z.literal('eager'),
  warmup: count,
  steps: z.int().positive(),
  /** finite numbers only: a metric that parsed to NaN is refused here, never committed */
  step_ms: z.array(z.number()),
  /** the step index of each value in step_ms */
  step_index: z.array(count),
  excluded: count,
  wall_ms: z.number().min(0),
  final: z.literal(true),
});
export type CommandRep = z.infer<typeof CommandRepSchema>;

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
  final: z.literal(true),
});
export type CommandError = z.infer<typeof CommandErrorSchema>;

export const CommandLineSchema = z.discriminatedUnion('type', [CommandHelloSchema, CommandRepSchema, CommandOutputSchema, CommandErrorSchema]);
export type CommandLine = z.infer<typeof CommandLineSchema>;
