/**
 * The registered experiment and its blocks' scheduling state in Redis.
 *
 * `<prefix>:experiment:<id>` (hash): id, name, hash, state, created, seq, priority, spec (the YAML as
 * submitted), spec_json (the parsed spec the hash is of), plan (JSON Plan), file, ended, reason.
 * `<prefix>:experiment:<id>:blocks` (hash): block index → JSON BlockState. Written by submit (all
 * `waiting`), then only by the scheduler leader, and by `orch cancel` (state → cancelling).
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { BlockSizing } from '../jobs/block-sizing.ts';
import { checkStored, parseStored } from '../jobs/parse-stored.ts';
import type { Plan } from '../jobs/plan.ts';
import { PlanSchema } from '../jobs/plan-schema.ts';
import { applyBlockSizing, BlockSizingSchema } from '../jobs/sized-plan.ts';
import { type Spec, SpecSchema } from '../jobs/spec.ts';
import type { SignedSubmission } from '../jobs/submit-signature.ts';
import { orchKeys } from './keys.ts';
import { runScript } from './scripts.ts';

export const EXPERIMENT_STATES = ['queued', 'running', 'cancelling', 'done', 'failed', 'cancelled'] as const;
export type ExperimentState = (typeof EXPERIMENT_STATES)[number];
const ExperimentStateSchema = z.enum(EXPERIMENT_STATES);
export const TERMINAL_EXPERIMENT_STATES: ReadonlySet<ExperimentState> = new Set(['done', 'failed', 'cancelled']);

export interface ExperimentRecord {
  id: string;
  name: string;
  hash: string;
  state: ExperimentState;
  created: number;
  seq: number;
  priority: number;
  /** the YAML text as submitted */
  specText: string;
  spec: Spec;
  /** the plan as it runs: the registered one, its later blocks regrouped once sized (jobs/sized-plan.ts) */
  plan: Plan;
  /** the plan as registered and signed at submit, when it differs from `plan` (sized); absent: `plan` */
  registeredPlan?: Plan;
  file: string;
  /** the submitter's signature under the submit token (jobs/submit-signature.ts); null when none */
  submitSignature: string | null;
  ended: number | null;
  reason: string | null;
}

/** stopped: a sequential experiment decided before the block ran (orchestrator/scheduler/sequential-stop.ts) */
export const BLOCK_PHASES = ['waiting', 'running', 'done', 'failed', 'cancelled', 'stopped'] as const;
export type BlockPhase = (typeof BLOCK_PHASES)[number];
export const TERMINAL_BLOCK_PHASES: ReadonlySet<BlockPhase> = new Set(['done', 'failed', 'cancelled', 'stopped']);

/** One host's share of a block's gang: one host job, one lease epoch. */
export const GangPartSchema = z.strictObject({
  host: z.string().min(1),
  cards: z.array(z.string().min(1)),
  epoch: z.int().min(0).meta({ unit: 'count' }),
  job: z.string(),
  /** a gang across hosts: its ranks in all, and this part's first (rank order: the parts' order) */
  world: z.int().min(1).meta({ unit: 'count' }).optional(),
  first_rank: z.int().min(0).meta({ unit: 'index' }).optional(),
});
export type GangPart = z.infer<typeof GangPartSchema>;

/** A block's scheduling state, the value of its field in the blocks hash. */
export const BlockStateSchema = z.strictObject({
  block: z.int().min(0).meta({ unit: 'index' }),
  phase: z.enum(BLOCK_PHASES),
  /** the attempt running or last run; 0 before the first grant */
  attempt: z.int().min(0).meta({ unit: 'count' }),
  /** the leased gang of the current attempt: one part per host, each with its own epoch */
  gang: z.array(GangPartSchema),
  /** why it is waiting (set by the scheduler at each grant pass) */
  why: z.string().nullable(),
  /** why it ended failed or cancelled, or why the last attempt was lost */
  reason: z.string().nullable(),
  expected_ms: z.number().meta({ unit: 'ms' }).nullable(),
  granted_at: z.number().meta({ unit: 'ms since the epoch' }).nullable(),
  ended_at: z.number().meta({ unit: 'ms since the epoch' }).nullable(),
  /** every attempt with how it ended: the audit trail of re-dispatches */
  attempts: z.array(
    z.strictObject({
      attempt: z.int().min(0).meta({ unit: 'count' }),
      gang: z.array(GangPartSchema),
      outcome: z.string(),
      reason: z.string().optional(),
    }),
  ),
});
export type BlockState = z.infer<typeof BlockStateSchema>;

export function initialBlockState(block: number): BlockState {
  return {
    block,
    phase: 'waiting',
    attempt: 0,
    gang: [],
    why: null,
    reason: null,
    expected_ms: null,
    granted_at: null,
    ended_at: null,
    attempts: [],
  };
}

/** A compare-and-set on a block: written, or refused with the state stored now (null: none). */
export type BlockWrite = { written: true } | { written: false; current: BlockState | null };

/** The reply of block-transition.lua and block-begin-attempt.lua: { 1 } or { 0, current JSON ('' when absent) }. */
const BlockWriteReplySchema = z.union([z.tuple([z.literal(1)]), z.tuple([z.literal(0), z.string()])]);

/** Decodes a compare-and-set's reply from `script`; the refused state comes back parsed. */
export function decodeBlockWrite(reply: unknown, script: string, where: string): BlockWrite {
  const r = checkStored(BlockWriteReplySchema, reply, `reply of store/lua/${script}.lua`);
  if (r[0] === 1) return { written: true };
  return { written: false, current: r[1] === '' ? null : parseStored(BlockStateSchema, r[1], where) };
}

/** The plan as it runs and, when sizing regrouped it, the plan as registered. */
function plansOf(h: Record<string, string>, key: string): Pick<ExperimentRecord, 'plan' | 'registeredPlan'> {
  const registered = parseStored(PlanSchema, h.plan as string, `${key} field plan`);
  if (!h.block_sizing) return { plan: registered };
  const where = `${key} field block_sizing`;
  const sized = applyBlockSizing(registered, parseStored(BlockSizingSchema, h.block_sizing, where), where);
  return { plan: sized, registeredPlan: registered };
}

/** What the submit signature covers of a record (jobs/submit-signature.ts): the plan as registered, not as sized. */
export function signedSubmission(exp: ExperimentRecord): SignedSubmission {
  return { ...exp, plan: exp.registeredPlan ?? exp.plan };
}

/** experiment-states.lua: one state per key, null where the experiment is gone. */
const StatesReplySchema = z.array(ExperimentStateSchema.nullable());
/** experiment-cancel.lua: the state after the call, null when the experiment does not exist. */
const CancelReplySchema = ExperimentStateSchema.nullable();

export class ExperimentStore {
  readonly keys;
  readonly sched;

  constructor(
    readonly redis: Redis,
    readonly prefix: string,
  ) {
    this.keys = orchKeys(prefix);
    this.sched = this.keys.sched;
  }

  /**
   * A new experiment id, `<name>-<yyyymmdd-hhmmss>-<n>`: sortable by time, no ':' (BullMQ ids
   * and file names), and unique by construction — n comes from one counter of the prefix, so two
   * submits in the same second never collide (a random suffix did, at about 900 submits/s).
   */
  async newId(name: string, now = new Date()): Promise<string> {
    const t = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
    return `${name}-${t}-${await this.redis.incr(this.keys.sched.ids)}`;
  }

  async get(id: string): Promise<ExperimentRecord | null> {
    const key = this.keys.exp(id);
    const h = await this.redis.hgetall(key);
    if (!h.hash || !h.plan || !h.spec_json) return null;
    return {
      id,
      name: h.name ?? id,
      hash: h.hash,
      state: checkStored(ExperimentStateSchema, h.state ?? 'queued', `${key} field state`),
      created: Number(h.created ?? 0),
      seq: Number(h.seq ?? 0),
      priority: Number(h.priority ?? 0),
      specText: h.spec ?? '',
      spec: parseStored(SpecSchema, h.spec_json, `${key} field spec_json`),
      ...plansOf(h, key),
      file: h.file ?? '',
      submitSignature: h.submit_sig || null,
      ended: h.ended ? Number(h.ended) : null,
      reason: h.reason || null,
    };
  }

  /**
   * blocks.reps_per_block: auto: the sizing of the blocks after the first, written once (HSETNX:
   * a second leader's write after the first changes nothing); false when one was there already.
   */
  async writeBlockSizing(id: string, sizing: BlockSizing): Promise<boolean> {
    return (await this.redis.hsetnx(this.keys.exp(id), 'block_sizing', JSON.stringify(sizing))) === 1;
  }

  async state(id: string): Promise<ExperimentState | null> {
    const key = this.keys.exp(id);
    return checkStored(ExperimentStateSchema.nullable(), await this.redis.hget(key, 'state'), `${key} field state`);
  }

  /** The states of several experiments in one call (null where one is gone), in the order of `ids`. */
  async states(ids: string[]): Promise<(ExperimentState | null)[]> {
    if (ids.length === 0) return [];
    return checkStored(
      StatesReplySchema,
      await runScript(
        this.redis,
        'experiment-states',
        ids.map((id) => this.keys.exp(id)),
        [],
      ),
      'reply of store/lua/experiment-states.lua',
    );
  }

  /** Moves to `state` unless the experiment already ended or is being cancelled. */
  async advance(id: string, state: 'running'): Promise<void> {
    await runScript(this.redis, 'experiment-advance', [this.keys.exp(id)], [state]);
  }

  async finish(id: string, state: 'done' | 'failed' | 'cancelled', reason: string | null): Promise<void> {
    await this.redis.hset(this.keys.exp(id), { state, ended: String(Date.now()), reason: reason ?? '' });
  }

  /** Marks the experiment cancelling; false when it already ended. */
  async requestCancel(id: string, reason: string): Promise<ExperimentState | null> {
    return checkStored(
      CancelReplySchema,
      await runScript(this.redis, 'experiment-cancel', [this.keys.exp(id)], [reason]),
      'reply of store/lua/experiment-cancel.lua',
    );
  }

  async blocks(id: string): Promise<BlockState[]> {
    const key = this.sched.blocks(id);
    const h = await this.redis.hgetall(key);
    return Object.entries(h)
      .map(([field, v]) => parseStored(BlockStateSchema, v, `${key} field ${field}`))
      .sort((a, b) => a.block - b.block);
  }

  async block(id: string, block: number): Promise<BlockState | null> {
    const key = this.sched.blocks(id);
    const v = await this.redis.hget(key, String(block));
    return v ? parseStored(BlockStateSchema, v, `${key} field ${block}`) : null;
  }

  /**
   * Moves a block from the state the caller read (`from`: its phase and attempt) to `to`, only
   * if that is still the stored state (store/lua/block-transition.lua); otherwise nothing is
   * written and the stored state comes back, for the caller to act on instead.
   */
  async transitionBlock(id: string, from: Pick<BlockState, 'phase' | 'attempt'>, to: BlockState): Promise<BlockWrite> {
    const key = this.sched.blocks(id);
    const reply = await runScript(
      this.redis,
      'block-transition',
      [key],
      [String(to.block), from.phase, from.attempt, JSON.stringify(to)],
    );
    return decodeBlockWrite(reply, 'block-transition', `${key} field ${to.block}`);
  }

  /**
   * Records a granted attempt (`to`: running, attempt N + 1) only if the block is still stored
   * (waiting, N) (store/lua/block-begin-attempt.lua), and moves the experiment to running.
   */
  async beginAttempt(id: string, waitingAttempt: number, to: BlockState): Promise<BlockWrite> {
    const key = this.sched.blocks(id);
    const reply = await runScript(
      this.redis,
      'block-begin-attempt',
      [key, this.keys.exp(id)],
      [String(to.block), waitingAttempt, JSON.stringify(to)],
    );
    return decodeBlockWrite(reply, 'block-begin-attempt', `${key} field ${to.block}`);
  }

  /**
   * Registers the experiment and its blocks and takes its place in the queue, atomically
   * (store/lua/register-experiment.lua). `record` is the experiment hash; `blocks` the
   * (block index, JSON BlockState) pairs.
   */
  async register(id: string, record: Record<string, string>, blocks: string[][]): Promise<number> {
    return Number(
      await runScript(
        this.redis,
        'register-experiment',
        [this.sched.seq, this.keys.exp(id), this.sched.blocks(id), this.sched.experiments, this.sched.active],
        [id, Object.keys(record).length, ...Object.entries(record).flat(), ...blocks.flat()],
      ),
    );
  }

  /** Experiments not yet ended, in submission order: the scheduler's queue. */
  async active(): Promise<string[]> {
    return this.redis.zrange(this.sched.active, '0', '-1');
  }

  /**
   * Up to `limit` active experiments registered after `seq` (exclusive), in submission order, with
   * their seq: what the leader reads of the queue on each pass instead of all of it.
   */
  async activeAfter(seq: number, limit: number): Promise<{ id: string; seq: number }[]> {
    const flat = await this.redis.zrangebyscore(this.sched.active, `(${seq}`, '+inf', 'WITHSCORES', 'LIMIT', 0, limit);
    const out: { id: string; seq: number }[] = [];
    for (let i = 0; i < flat.length; i += 2) out.push({ id: flat[i] as string, seq: Number(flat[i + 1]) });
    return out;
  }

  /** Takes an ended experiment out of the scheduler's queue. */
  async deactivate(id: string): Promise<void> {
    await this.redis.zrem(this.sched.active, id);
  }

  /** Experiment ids, oldest first. */
  async list(): Promise<string[]> {
    return this.redis.zrange(this.sched.experiments, '0', '-1');
  }
}
