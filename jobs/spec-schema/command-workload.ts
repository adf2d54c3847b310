import { z } from 'zod';
import { artifactEscape } from '../artifact-path.ts';
import { RequiresSchema } from '../card-requirements.ts';
import { LIMITS, LIMITS_FILE } from '../limits.ts';
import {
  boundedList,
  CommandSchema,
  EnvNameSchema,
  EnvSchema,
  EnvValueSchema,
  intIn,
  PathSchema,
  processString,
  TimeoutSchema,
} from './bounded.ts';
import { LauncherSchema, startsTorchrun, TORCHRUN_IN_CMD } from './launcher.ts';
import { strictObject } from './strict-object.ts';

/** What the build's content address is made of (worker/builds/build-key.ts computes it). */
const BuildKeySchema = strictObject({
  /** The commit of the build directory's git checkout. */
  git: z.boolean().default(true),
  /** The uncommitted diff, so a dirty tree never reuses a clean build. */
  dirty_diff: z.boolean().default(true),
  /** Extra strings that change the artifact (compiler flags, build options). */
  flags: boundedList(
    processString(LIMITS.orch.command_length.max, 'a flag is hashed into the build key; keep it short'),
  ).default([]),
  /** Commands whose output is hashed, e.g. `nvcc --version`. */
  toolchain: boundedList(CommandSchema).default([]),
});

const BuildSchema = strictObject({
  cmd: CommandSchema,
  /** Paths (relative to `dir`) the build produces; they are what the cache keeps. */
  artifacts: boundedList(
    PathSchema.refine((a) => artifactEscape(a) === null, {
      error: (iss) => artifactEscape(String(iss.input)) ?? 'invalid artifact path',
    }),
  ).min(1),
  key: BuildKeySchema.default({ git: true, dirty_diff: true, flags: [], toolchain: [] }),
  dir: PathSchema.optional(),
});

/**
 * per_rep (the default when absent, so specs written before `mode` keep their hash): one process
 * per rep, its metric read from its output (`metric_source`). resident: the program is started
 * once per rank for the block attempt and speaks the rank protocol (ranklib/PROTOCOL.md) through
 * a rank library; it gets toggles per request, and the identity gate.
 */
export const RUN_MODES = ['per_rep', 'resident'] as const;

/** The variable the CUDA driver loads an injection library from at cuInit (one per process). */
export const INJECTION_VARIABLE = 'CUDA_INJECTION64_PATH';
/** The variable NVTX loads an injection library from at a program's first NVTX call (one per process). */
export const NVTX_INJECTION_VARIABLE = 'NVTX_INJECTION64_PATH';

/**
 * `run.launch_counts_step_range`: the NVTX range (its ASCII message) that is one step of a per_rep
 * program, so that its launch counts are per step, not per rep ÷ steps (jobs/per-rep-counts.ts).
 * Bounded as orch's names are; printable, since it travels in an environment variable and the report.
 */
const StepRangeSchema = z
  .string()
  .min(1)
  .max(LIMITS.orch.name_length.max, {
    error: `an NVTX step range is a name, at most ${LIMITS.orch.name_length.max} characters (${LIMITS_FILE} orch.name_length)`,
  })
  .regex(/^[\x20-\x7e]+$/, {
    error:
      'an NVTX step range is matched as the ASCII message of nvtxRangePushA/nvtxRangeStartA: printable ASCII only, no control characters',
  });

/** The shortest hello deadline a spec may set, in seconds. */
export const HELLO_TIMEOUT_MIN_S = 1;

const RunSchema = strictObject({
  cmd: CommandSchema.refine((cmd) => !startsTorchrun(cmd), { error: TORCHRUN_IN_CMD }),
  mode: z.enum(RUN_MODES).optional(),
  /** absent: each rank gets torchrun's rendezvous variables and its own card; `torchrun`: jobs/spec-schema/launcher.ts */
  launcher: LauncherSchema.optional(),
  /**
   * resident: how long the program may take to say hello (its imports and setup are in it);
   * default 120 s. At least HELLO_TIMEOUT_MIN_S: a process start alone takes longer than a few ms,
   * and a deadline no program can meet fails every block after its lease is taken.
   */
  hello_timeout_s: z
    .number()
    .min(HELLO_TIMEOUT_MIN_S, {
      error: `no program starts and says hello this fast (the value is in seconds): use at least ${HELLO_TIMEOUT_MIN_S}, or leave it out for the default 120`,
    })
    .max(LIMITS.orch.timeout_s.max, {
      error: `Node's setTimeout holds at most 2^31-1 ms (${LIMITS_FILE} orch.timeout_s)`,
    })
    .optional(),
  /**
   * cuda cards: true runs the program with orch's CUPTI injection library, which counts every
   * launch of each measured step of a resident rank (ranklib/PROTOCOL.md "Launch counts and
   * clocks"), or, per_rep, per NVTX range launch_counts_step_range names, else of the whole rep
   * divided by the steps it reported (jobs/per-rep-counts.ts). Absent:
   * off, because CUPTI in the process slows what is timed: on the H200 a PyTorch graph step by
   * 13–18 % and the CUDA example's by 4–7 % with nothing but the subscription (bench/h200/user-rank).
   */
  launch_counts: z.boolean().optional(),
  /** per_rep: the NVTX range one step is (StepRangeSchema); absent: counts per rep ÷ steps */
  launch_counts_step_range: StepRangeSchema.optional(),
  /** Absolute: checked to exist by `orch validate`; relative: resolved on the worker (against the build's artifact dir, else its cwd), and never climbing out of it (`../x` is refused). */
  cwd: PathSchema.optional(),
  env: EnvSchema.optional(),
  timeout_s: TimeoutSchema.default(600),
}).superRefine(checkStepRange);

/** What `run.launch_counts_step_range` needs from the rest of `run`: each gap named with its fix. */
function checkStepRange(
  run: {
    launch_counts?: boolean | undefined;
    launch_counts_step_range?: string | undefined;
    mode?: string | undefined;
    env?: Record<string, string> | undefined;
  },
  ctx: z.RefinementCtx,
): void {
  if (run.launch_counts_step_range === undefined) return;
  const path = ['launch_counts_step_range'];
  if (run.launch_counts !== true)
    ctx.addIssue({
      code: 'custom',
      path,
      message:
        'an NVTX step range delimits launch counts, which are off: add launch_counts: true beside it, or remove it',
    });
  if (run.mode === 'resident')
    ctx.addIssue({
      code: 'custom',
      path,
      message:
        "a resident rank's steps are its rank library's step() calls, already counted per step: remove launch_counts_step_range (it is for run.mode: per_rep)",
    });
  if (run.env?.[NVTX_INJECTION_VARIABLE] !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['env', NVTX_INJECTION_VARIABLE],
      message: `${NVTX_INJECTION_VARIABLE} names another tool's NVTX injection library; orch's NVTX step range needs it and never replaces it: remove it from run.env, or remove launch_counts_step_range (counts per rep ÷ steps)`,
    });
  }
}

/** How one toggle reaches the user's binary: an env var with on/off values, or extra args. */
const EnvToggleSchema = strictObject({ env: EnvNameSchema, on: EnvValueSchema, off: EnvValueSchema });
const ToggleArgSchema = processString(
  LIMITS.orch.command_length.max,
  "the toggle's argument joins the /bin/sh -c command line",
);
const ArgToggleSchema = strictObject({ arg_on: ToggleArgSchema, arg_off: ToggleArgSchema });
/** resident: the toggle travels in each request; the program's hello must list it. */
export const REQUEST_TOGGLE = 'request';
export const ToggleMappingSchema = z.union([EnvToggleSchema, ArgToggleSchema, z.literal(REQUEST_TOGGLE)], {
  error: 'expected { env, on, off } or { arg_on, arg_off } (quote values: on: "1"), or request (run.mode: resident)',
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
  /** What a card must have to run the program (jobs/card-requirements.ts): checked when the spec is planned against the cluster's cards. Absent: any card. */
  requires: RequiresSchema.optional(),
  run: RunSchema,
  toggles: z
    .record(
      z
        .string()
        .max(LIMITS.orch.name_length.max)
        .regex(/^[A-Za-z0-9_]+$/),
      ToggleMappingSchema,
    )
    .refine((t) => Object.keys(t).length <= LIMITS.orch.list_length.max, {
      error: `more toggles than orch plans for (${LIMITS_FILE} orch.list_length)`,
    })
    .default({}),
  /** per_rep only (resident ranks report their step times): how each step's value is read. */
  metric_source: MetricSourceSchema.optional(),
  /** resident: what the program's setup(params) gets (ORCH_PARAMS, one JSON object) */
  params: z
    .record(
      z
        .string()
        .max(LIMITS.orch.name_length.max)
        .regex(/^[A-Za-z0-9_]+$/),
      z.union([z.number(), z.boolean(), EnvValueSchema]),
    )
    .refine((t) => Object.keys(t).length <= LIMITS.orch.list_length.max, {
      error: `more params than orch plans for (${LIMITS_FILE} orch.list_length)`,
    })
    .optional(),
  /** Steps with an index below `warmup` are excluded (by the parsed step index, else by order). */
  warmup: intIn(LIMITS.graphrt.warmup, 'as for a native workload, warm-up steps per rep are bounded').default(8),
  steps: intIn(LIMITS.graphrt.steps, 'as for a native workload, steps per rep are bounded').default(64),
  /** The command `design: probe` runs instead of `run.cmd`. */
  probe: strictObject({ cmd: CommandSchema, timeout_s: TimeoutSchema.default(600) }).optional(),
});
export type CommandWorkload = z.infer<typeof CommandWorkloadSchema>;
