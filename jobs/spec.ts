/**
 * The experiment spec: what a user writes (configs/*.yaml are commented examples).
 * Stages: raw YAML → parsed (this schema: types, ranges, defaults, unknown keys rejected) →
 * compiled (jobs/compile-spec.ts: cross-field checks) → planned (jobs/plan.ts).
 * Every default lives here, so the hash of the parsed spec (jobs/spec-hash.ts) does not change
 * when a user spells a default out.
 */
import { z } from 'zod';
import { HYGIENE_POLICIES } from './clock-hygiene.ts';
import { LIMITS, LIMITS_FILE } from './limits.ts';
import { AcrossRunsSchema } from './spec-schema/across-runs.ts';
import { boundedList, EnvValueSchema, intIn } from './spec-schema/bounded.ts';
import { BuildsSchema, RepoSchema } from './spec-schema/builds.ts';
import { CommandWorkloadSchema } from './spec-schema/command-workload.ts';
import { NativeWorkloadSchema } from './spec-schema/native-workload.ts';
import { NAME_MAX_LENGTH, NameSchema, strictObject } from './spec-schema/strict-object.ts';

export const DESIGNS = ['ab', 'leave-one-out', 'sweep', 'probe'] as const;
export type Design = (typeof DESIGNS)[number];

export const WorkloadSchema = z.discriminatedUnion('runtime', [NativeWorkloadSchema, CommandWorkloadSchema]);
export type Workload = z.infer<typeof WorkloadSchema>;

/** One arm of an A/B: a name and a value for some toggles (the others are off). */
export const SpecArmSchema = strictObject({
  name: NameSchema,
  /** A string value is an env toggle's value (command workloads). */
  toggles: z.record(z.string(), z.union([z.boolean(), EnvValueSchema])).default({}),
  /** A key of `builds`: this arm runs that build (default: the spec's `build`). */
  build: NameSchema.optional(),
});
export type SpecArm = z.infer<typeof SpecArmSchema>;

/**
 * `design: sweep`: one arm per value. Either `param` (a native workload param, e.g. hidden) or
 * `toggle` (a command workload's env toggle, set to each value). Every spec toggle is on in
 * every sweep arm, so the sweep measures the configuration under study at each size.
 */
export const SweepSchema = strictObject({
  param: z.string().min(1).optional(),
  toggle: z.string().min(1).optional(),
  /** Native param values are checked against graphrt's range in compile-spec (which param is known there). */
  values: boundedList(
    z.union([
      z.int().positive(),
      z.string().min(1).max(NAME_MAX_LENGTH, { error: 'a value becomes part of an arm name; shorten it' }),
    ]),
  ).min(2),
});
export type Sweep = z.infer<typeof SweepSchema>;

export const BlocksSchema = strictObject({
  /** Blocks are the replication unit; each runs every arm's reps on its own cards. */
  count: intIn(LIMITS.orch.blocks, 'each block is a gang of cards run to the end; more do not fit a plan').default(1),
  /** Ranks (one card each) per block. */
  ranks: intIn(LIMITS.graphrt.world, "graphrt's --world refuses larger gangs").default(1),
  /**
   * host: all of a block's cards on one host. spread: one host when one has the cards free,
   * else across the fewest hosts (ranks talk over the network: NCCL over sockets or IB).
   * host_then_spread: one host, and across hosts only when no registered host has enough
   * cards for the gang. A new value, not a new field: existing specs keep their hash.
   */
  placement: z.enum(['host', 'spread', 'host_then_spread']).default('host'),
  /**
   * Reps per arm of each block after the first (jobs/reps-per-block.ts): `auto` sizes them from the
   * first block's start-up (at most 3 % of a lease; the default for a resident command rank), a
   * number bounds them; the reps in all stay reps × count. Optional, so existing specs keep their hash.
   */
  reps_per_block: z
    .union([z.literal('auto'), intIn(LIMITS.orch.reps, 'a block holds at most as many reps per arm as `reps` may')])
    .optional(),
});

export const GatesSchema = strictObject({
  /** Byte identity of graph replay vs eager: capture + `replays` replays; false turns it off. */
  identity: z
    .union(
      [
        strictObject({
          replays: intIn(
            { min: LIMITS.orch.identity_replays.min, max: LIMITS.graphrt.replays.max },
            'graphrt refuses more replays (BAD_PARAM)',
          ).default(7),
          /** a command workload's toggle that turns capture on (native: graphrt's `graph`, never named) */
          toggle: z.string().min(1).max(NAME_MAX_LENGTH).optional(),
        }),
        z.literal(false),
      ],
      {
        error:
          'expected { replays: N } with N >= 3 (and, for a command workload, toggle: <its capture toggle>), or false',
      },
    )
    .default({ replays: 7 }),
  /** Adds the A/A arm `<control>_aa`: a copy of the control that must not differ from it. */
  aa: z.boolean().default(false),
  /**
   * The base arm must agree with the same arm run from the reference build (a key of `builds`),
   * measured in the same blocks: the paired CI of their ratio must lie within ±`tolerance`.
   * `value` (optional) also checks the base arm's mean against a recorded number.
   */
  base_reference: strictObject({
    build: NameSchema,
    tolerance: z.number().positive(),
    value: z.number().positive().optional(),
  }).optional(),
});

/**
 * fixed: every planned block runs. sequential (orchestrator/stats/sequential.ts): `max_blocks`
 * blocks are planned, the primary comparison is looked at `looks` times at block boundaries
 * (evenly over the budget), each against an O'Brien–Fleming-type alpha-spending boundary, and the
 * experiment stops at the first look that decides (faster, slower, equivalent); the blocks it did
 * not need end stopped, with the look that stopped them.
 */
export const StoppingSchema = strictObject({
  rule: z.enum(['fixed', 'sequential']),
  /** At least 2 (one look before the end); 0 and 1 get the same message and fix. */
  max_blocks: z
    .int()
    .min(2, {
      error:
        'a sequential experiment looks before its last block, so it needs at least 2: raise stopping.max_blocks, or use stopping.rule: fixed with blocks.count',
    })
    .max(LIMITS.orch.blocks.max, {
      error: `each block is a gang of cards run to the end; more do not fit a plan; use at most ${LIMITS.orch.blocks.max} (${LIMITS_FILE})`,
    })
    .optional(),
  looks: intIn({ min: 2, max: 20 }, 'each look spends alpha; more than 20 buy nothing').default(5),
});
export type Stopping = z.infer<typeof StoppingSchema>;

export const MetricSchema = strictObject({
  name: z.string().min(1).default('ms_per_step'),
  better: z.enum(['lower', 'higher']).default('lower'),
  statistic: z.enum(['median', 'mean']).default('median'),
  /** The smallest relative effect worth reporting as a difference. */
  min_effect: z.number().positive().default(0.01),
});

export const SpecSchema = strictObject({
  kind: z.literal('experiment').default('experiment'),
  name: NameSchema,
  design: z.enum(DESIGNS),
  workload: WorkloadSchema,
  /** The repository `builds` name refs of (relative to the spec file); default: the spec file's git toplevel. */
  repo: RepoSchema.optional(),
  /** Named builds of the workload, each a git ref resolved to a commit at submit (jobs/spec-schema/builds.ts). */
  builds: BuildsSchema.optional(),
  /** The build every arm runs unless it names its own (a key of `builds`). */
  build: NameSchema.optional(),
  /** Native: graphrt toggle names; command: keys of workload.toggles. */
  toggles: boundedList(z.string().min(1).max(NAME_MAX_LENGTH)).default([]),
  /** design ab only: exactly two arms. */
  arms: boundedList(SpecArmSchema).optional(),
  /** design sweep only. */
  sweep: SweepSchema.optional(),
  reps: intIn(
    LIMITS.orch.reps,
    'reps per arm per block are bounded so the plan stays small to compute and run',
  ).default(5),
  /** Absent: fixed (optional, so specs written before it keep their hash). */
  stopping: StoppingSchema.optional(),
  blocks: BlocksSchema.default({ count: 1, ranks: 1, placement: 'host' }),
  gates: GatesSchema.default({ identity: { replays: 7 }, aa: false }),
  metric: MetricSchema.default({ name: 'ms_per_step', better: 'lower', statistic: 'median', min_effect: 0.01 }),
  /** balanced: ABBA / Williams; random: a seeded shuffle per round (needs `seed`). */
  order: z.enum(['balanced', 'random']).default('balanced'),
  seed: intIn({ min: 0, max: LIMITS.orch.seed.max }, 'the order shuffle (mulberry32) takes a 32-bit seed').optional(),
  /** Higher runs first among waiting experiments. */
  priority: intIn(LIMITS.orch.priority, 'priorities are compared as plain numbers; keep them small').default(0),
  /** Another process on a leased card: fail the block, or wait for it to go. */
  foreign_process: z.enum(['fail', 'wait']).default('fail'),
  /**
   * A rep whose card was throttled (jobs/clock-hygiene.ts): warn, flag (absent: flag; optional so
   * that specs written before it keep their hash) or discard (not used, its pair neither).
   */
  hygiene: z.enum(HYGIENE_POLICIES).optional(),
  /**
   * hygiene: discard only: how many pairs (every arm's k-th rep of a block) a block runs again at
   * its end when a rep of theirs was throttled; absent: ceil(reps / 2) (jobs/clock-hygiene.ts
   * `rerunBudget`), so a throttled card can lengthen a block by half at most.
   */
  hygiene_reruns: intIn(
    { min: 0, max: LIMITS.orch.reps.max },
    'a block re-runs at most as many pairs as it has',
  ).optional(),
  /** Preflight refuses a host with less free disk than this. */
  min_free_disk_gb: z.number().min(0).default(1),
  /**
   * What may be compared between two runs of this spec (jobs/spec-schema/across-runs.ts); absent:
   * nothing across Slurm node changes (optional, so specs written before it keep their hash).
   */
  across_runs: AcrossRunsSchema.optional(),
});
export type Spec = z.infer<typeof SpecSchema>;
