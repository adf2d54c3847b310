/**
 * The payload of one host job on queue `host-<host>` (jobs/CONTRACTS.md "Block job"): one
 * attempt of one block, on a gang of cards the scheduler leased under `epoch`. The worker
 * parses it with BlockJobSchema before touching a card; a payload that fails is a bug upstream
 * and fails the job unrecoverably with the schema error.
 */
import { z } from 'zod';
import { HYGIENE_POLICIES } from './clock-hygiene.ts';
import { CARD_PATTERN, HOST_NAME_PATTERN } from './name-patterns.ts';
import { toggleIsOn } from './rank-protocol-constants.ts';
import { WorkloadSchema } from './spec.ts';

/** Names that become Redis keys, queue names, job ids and file names. */
const KeyNameSchema = z.string().regex(HOST_NAME_PATTERN, 'only letters, digits and _ . @ -');

export const BlockArmSchema = z.object({
  name: KeyNameSchema,
  toggles: z.record(z.string(), z.union([z.boolean(), z.string()])),
  /** design sweep over a native param: the workload params this arm overrides */
  params: z.record(z.string(), z.int().positive()).optional(),
  aa_of: KeyNameSchema.optional(),
  /** A key of the job's `builds`: the rep runs that build's artifacts. */
  build: KeyNameSchema.optional(),
  /** The base-reference arm: `ref_of`'s toggles from the reference build. */
  ref_of: KeyNameSchema.optional(),
});
export type BlockArm = z.infer<typeof BlockArmSchema>;

export const BlockJobSchema = z
  .object({
    experiment: KeyNameSchema,
    spec_hash: z.string().min(1),
    block: z.int().min(0),
    /** 1 for the first dispatch; a failed or lost attempt is re-dispatched as attempt + 1. */
    attempt: z.int().min(1),
    /** The fencing token of the gang's leases. */
    epoch: z.int().min(1),
    host: KeyNameSchema,
    /** One card id per rank, in rank order; all leased under `epoch`. */
    cards: z.array(z.string().regex(CARD_PATTERN)).min(1),
    /** placement spread: ranks of the whole gang (all hosts) and this host's first; default cards.length, 0 */
    world: z.int().min(1).optional(),
    first_rank: z.int().min(0).optional(),
    workload: WorkloadSchema,
    arms: z.array(BlockArmSchema).min(1),
    /** The planned order of this block: arm names, each arm `reps` times. */
    sequence: z.array(KeyNameSchema).min(1),
    gates: z.object({
      /** toggle: a command workload's capture toggle (native: graphrt's `graph`) */
      identity: z.object({ replays: z.int().min(1), toggle: z.string().min(1).optional() }).nullable(),
      aa: z.boolean(),
    }),
    warmup: z.int().min(0),
    steps: z.int().min(1),
    foreign_process: z.enum(['fail', 'wait']),
    /** spec.hygiene: discard makes the worker run a throttled pair again at the block's end, `reruns` pairs at most */
    hygiene: z.object({ policy: z.enum(HYGIENE_POLICIES), reruns: z.int().min(0) }).optional(),
    /**
     * design probe of a resident command rank: every planned rep is a `trace` request, the rank
     * runs under orch's injection library in trace mode and graphrt's chain measures the card's
     * graph-node floor before it starts (worker/command/). Never set for a timed design.
     */
    trace_probe: z.literal(true).optional(),
    /**
     * How many planned blocks come after this one (by index, wherever they run): a resident rank
     * with more to come starts the next one's process in the host phase while it holds the card
     * (worker/command/prepared-slots.ts). Absent: none.
     */
    blocks_after: z.int().min(1).optional(),
    /** spec.min_free_disk_gb: preflight refuses a host with less free disk (worker/preflight/). */
    min_free_disk_gb: z.number().min(0).optional(),
    /** Builds as arms (jobs/build-refs.ts): the repository and each build's commit, built in a worktree per commit. */
    builds: z
      .object({
        repo: z.string().min(1),
        builds: z.record(
          KeyNameSchema,
          z.object({ commit: z.string().regex(/^[0-9a-f]{40,64}$/), ref: z.string().min(1) }),
        ),
      })
      .optional(),
  })
  .superRefine((job, ctx) => {
    const names = new Set(job.arms.map((a) => a.name));
    if (names.size !== job.arms.length)
      ctx.addIssue({ code: 'custom', path: ['arms'], message: 'arm names must be unique' });
    job.sequence.forEach((name, i) => {
      if (!names.has(name)) ctx.addIssue({ code: 'custom', path: ['sequence', i], message: `unknown arm "${name}"` });
    });
    if (job.world !== undefined && (job.first_rank ?? 0) + job.cards.length > job.world) {
      ctx.addIssue({
        code: 'custom',
        path: ['world'],
        message: `first_rank ${job.first_rank ?? 0} + ${job.cards.length} cards exceeds world ${job.world}`,
      });
    }
    job.arms.forEach((a, i) => {
      if (a.build !== undefined && job.builds?.builds[a.build] === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['arms', i, 'build'],
          message: `arm "${a.name}" runs build "${a.build}", which the job's builds do not hold`,
        });
      }
    });
    if (new Set(job.cards).size !== job.cards.length) {
      ctx.addIssue({ code: 'custom', path: ['cards'], message: 'a card appears twice in the gang' });
    }
  });
export type BlockJob = z.infer<typeof BlockJobSchema>;

/** The ranks of the whole gang, every host's: `world` where spread, else one per card of this job. */
export function gangWorld(job: Pick<BlockJob, 'world' | 'cards'>): number {
  return job.world ?? job.cards.length;
}

/**
 * Arms of the block whose toggles turn graph capture on (graphrt's `graph`, or the command
 * workload's gates.identity.toggle): each gets the identity gate, in the order
 * the block's sequence first runs them. The gate's capture is the graph the arm's reps replay, and
 * on the H200 a graph's speed depends on what was instantiated before it: of two identical chain
 * graphs in one process the one captured second ran 0.35-0.58 % slower, and across two processes
 * (two builds of one commit) 12 % slower (bench/h200-builds, native/BENCHMARKS.md). In arm order
 * every block would capture the control first and carry that into every comparison as a bias;
 * following the sequence, whose first arm alternates between blocks, counterbalances it over
 * blocks, where the analysis sees it as block-to-block noise.
 */
export function armsNeedingIdentity(job: BlockJob): BlockJob['arms'] {
  if (job.gates.identity === null) return [];
  const first = (name: string) => {
    const at = job.sequence.indexOf(name);
    return at === -1 ? job.sequence.length : at;
  };
  const capture = job.gates.identity.toggle ?? 'graph';
  return job.arms.filter((a) => isOn(a.toggles[capture])).sort((a, b) => first(a.name) - first(b.name));
}

/** A toggle's value as an arm carries it: a boolean, or a command toggle's string. */
const isOn = toggleIsOn;

/**
 * The reps of a block's sequence in run order: each position with its arm's 0-based occurrence
 * (`rep`). Worker, scheduler and analysis all number reps this way: the `<block>/<arm>/<rep>`
 * fields of results and failed must mean the same rep to each of them.
 */
export function sequenceReps(sequence: readonly string[]): { position: number; arm: string; rep: number }[] {
  const seen = new Map<string, number>();
  return sequence.map((arm, position) => {
    const rep = seen.get(arm) ?? 0;
    seen.set(arm, rep + 1);
    return { position, arm, rep };
  });
}
