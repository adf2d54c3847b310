import { z } from 'zod';
import { strictObject } from './strict-object.ts';

/** What the build's content address is made of (DESIGN.md "build"). */
const BuildKeySchema = strictObject({
  /** The commit of the build directory's git checkout. */
  git: z.boolean().default(true),
  /** The uncommitted diff, so a dirty tree never reuses a clean build. */
  dirty_diff: z.boolean().default(true),
  /** Extra strings that change the artifact (compiler flags, build options). */
  flags: z.array(z.string()).default([]),
  /** Commands whose output is hashed, e.g. `nvcc --version`. */
  toolchain: z.array(z.string()).default([]),
});

const BuildSchema = strictObject({
  cmd: z.string().min(1),
  /** Paths (relative to `dir`) the build produces; they are what the cache keeps. */
  artifacts: z.array(z.string().min(1)).min(1),
  key: BuildKeySchema.default({ git: true, dirty_diff: true, flags: [], toolchain: [] }),
  dir: z.string().min(1).optional(),
});

const RunSchema = strictObject({
  cmd: z.string().min(1),
  cwd: z.string().min(1).optional(),
  env: z.record(z.string(), z.string()).optional(),
  timeout_s: z.number().positive().default(600),
});

/** How one toggle reaches the user's binary: an env var with on/off values, or extra args. */
const EnvToggleSchema = strictObject({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), on: z.string(), off: z.string() });
const ArgToggleSchema = strictObject({ arg_on: z.string(), arg_off: z.string() });
export const ToggleMappingSchema = z.union([EnvToggleSchema, ArgToggleSchema], {
  error: 'expected { env, on, off } or { arg_on, arg_off } (quote values: on: "1")',
});
export type ToggleMapping = z.infer<typeof ToggleMappingSchema>;

/** How the metric is read from the command's stdout, one value per step. */
export const MetricSourceSchema = z.discriminatedUnion('format', [
  strictObject({ format: z.literal('jsonl'), field: z.string().min(1), step_field: z.string().min(1).optional() }),
  strictObject({
    format: z.literal('regex'),
    /** A JavaScript regular expression with a named group for the value (and the step). */
    pattern: z.string().min(1),
    value_group: z.string().min(1).default('value'),
    step_group: z.string().min(1).optional(),
  }),
]);
export type MetricSource = z.infer<typeof MetricSourceSchema>;

export const CommandWorkloadSchema = strictObject({
  runtime: z.literal('command'),
  build: BuildSchema.optional(),
  run: RunSchema,
  toggles: z.record(z.string().regex(/^[A-Za-z0-9_]+$/), ToggleMappingSchema).default({}),
  metric_source: MetricSourceSchema,
  /** Steps with an index below `warmup` are excluded (by the parsed step index, else by order). */
  warmup: z.int().min(0).default(8),
  steps: z.int().min(1).default(64),
  /** The command `design: probe` runs instead of `run.cmd`. */
  probe: strictObject({ cmd: z.string().min(1), timeout_s: z.number().positive().default(600) }).optional(),
});
export type CommandWorkload = z.infer<typeof CommandWorkloadSchema>;
