/**
 * The committed results of block attempts (jobs/CONTRACTS.md "Redis keys"): one committed
 * attempt per block, fenced by the lease epoch (lua/commit-block.lua), and the reasons reps were
 * not measured (lua/fail-block.lua). The aggregator reads only `results`, `gates` and `failed`.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { GangHost } from '../jobs/commit-record.ts';
import { type CommitRecord, CommitRecordSchema } from '../jobs/commit-record.ts';
import { OrchError } from '../jobs/errors.ts';
import { type FailedRecord, FailedRecordSchema, type FailedRep } from '../jobs/failed-rep.ts';
import { type GateResult, GateResultSchema } from '../jobs/gate-result.ts';
import { quoteLine } from '../jobs/line-limit.ts';
import { checkStored, parseStored } from '../jobs/parse-stored.ts';
import { type ProbeRecord, ProbeRecordSchema } from '../jobs/probe-record.ts';
import type { RankOrigin } from '../jobs/rank-origin.ts';
import {
  RANK_OUTPUT_RECORDS_MAX,
  type RankOutputTail,
  RankOutputTailSchema,
  rankOutputField,
} from '../jobs/rank-output-tail.ts';

import { escapeRankText } from '../jobs/rank-text.ts';
import { type RepResult, RepResultSchema } from '../jobs/rep-result.ts';
import { describeIssues } from '../jobs/schema-issues.ts';
import { gateField, type OrchKeys, orchKeys, repKey } from './keys.ts';
import { runScript } from './scripts.ts';

export interface CommitRep {
  block: number;
  arm: string;
  rep: number;
  result: RepResult;
}
export interface CommitGate {
  block: number;
  arm: string;
  result: GateResult;
}
/** A rep that was not measured: failed (default), not_run (graceful stop) or cancelled (jobs/failed-rep.ts). */
export type { FailedRep } from '../jobs/failed-rep.ts';

export interface CommitInput {
  experiment: string;
  block: number;
  attempt: number;
  epoch: number;
  host: string;
  cards: string[];
  reps: CommitRep[];
  /** reps of this attempt that will not run (graceful stop): final, reason kept */
  notRun: FailedRep[];
  gates: CommitGate[];
  /** the attempt's timeline (jobs/commit-record.ts: started, ready, gated; epoch ms; how each rank started), committed with it */
  timeline?: Pick<CommitRecord, 'started' | 'ready' | 'gated' | 'startup'> & { started: number };
  /** where each rank of the gang ran (jobs/rank-origin.ts), committed with the block */
  ranks?: RankOrigin[];
  /** each host of the gang as its worker read it at the start (machine record, Slurm allocation) */
  hosts?: GangHost[];
}

export type CommitResult =
  | { committed: true }
  | { committed: false; why: 'epoch'; card: string; holder: number | null }
  /** the experiment hash is gone (a Redis that lost its data): nothing written */
  | { committed: false; why: 'gone' }
  | { committed: false; why: 'committed'; prior: { attempt: number; epoch: number; host: string } };

export class ResultStore {
  readonly keys: OrchKeys;

  constructor(
    private readonly redis: Redis,
    opts: { prefix?: string } = {},
  ) {
    this.keys = orchKeys(opts.prefix);
  }

  async commitBlock(c: CommitInput): Promise<CommitResult> {
    const k = this.keys;
    const record = JSON.stringify(
      CommitRecordSchema.parse({
        attempt: c.attempt,
        epoch: c.epoch,
        host: c.host,
        committed: Date.now(),
        ...c.timeline,
        ...(c.ranks === undefined ? {} : { ranks: c.ranks }),
        ...(c.hosts === undefined ? {} : { hosts: c.hosts }),
      }),
    );
    const args: (string | number)[] = [
      c.epoch,
      String(c.block),
      record,
      c.reps.length,
      c.notRun.length,
      c.gates.length,
    ];
    // the same schemas as the reads: a record that could not be read back is never written
    for (const r of c.reps) args.push(repKey(r), JSON.stringify(RepResultSchema.parse(r.result)));
    for (const f of c.notRun) args.push(repKey(f), failedJson(f, c.attempt));
    for (const g of c.gates) args.push(gateField(g.block, g.arm), JSON.stringify(GateResultSchema.parse(g.result)));
    const reply = await runScript(
      this.redis,
      'commit-block',
      [
        k.results(c.experiment),
        k.failed(c.experiment),
        k.gates(c.experiment),
        k.commits(c.experiment),
        k.exp(c.experiment),
        ...c.cards.map((card) => k.lease(card)),
      ],
      args,
    );
    return decodeCommitBlock(reply, c.cards, `${k.commits(c.experiment)} field ${c.block}`, record);
  }

  /**
   * Design probe: writes the attempt's probe records before its block commits, fenced by the
   * epoch like the commit (lua/commit-probes.lua); when refused, `why` says so in words.
   */
  async commitProbes(c: {
    experiment: string;
    block: number;
    epoch: number;
    cards: string[];
    records: ProbeRecord[];
  }): Promise<{ written: true } | { written: false; why: string }> {
    const k = this.keys;
    const args: (string | number)[] = [c.epoch, String(c.block)];
    for (const r of c.records) args.push(repKey(r), JSON.stringify(ProbeRecordSchema.parse(r)));
    const reply = checkStored(
      CommitProbesReplySchema,
      await runScript(
        this.redis,
        'commit-probes',
        [k.probes(c.experiment), k.commits(c.experiment), k.exp(c.experiment), ...c.cards.map((card) => k.lease(card))],
        args,
      ),
      'reply of store/lua/commit-probes.lua',
    );
    if (reply[0] === 1) return { written: true };
    if (reply[1] === 'GONE') return { written: false, why: `experiment ${c.experiment} no longer exists in Redis` };
    if (reply[1] === 'EPOCH')
      return {
        written: false,
        why: `card ${c.cards[reply[2] - 1] ?? '?'} is ${reply[3] === '' ? 'no longer leased' : `leased under epoch ${reply[3]}`}, not epoch ${c.epoch}`,
      };
    return { written: false, why: `another attempt already committed block ${c.block}` };
  }

  /** Design probe: the probe records of the blocks' committed attempts only. */
  async probes(experiment: string): Promise<Record<string, ProbeRecord>> {
    const [all, commits] = await Promise.all([
      parseAll(await this.redis.hgetall(this.keys.probes(experiment)), ProbeRecordSchema, this.keys.probes(experiment)),
      this.commits(experiment),
    ]);
    return Object.fromEntries(Object.entries(all).filter(([, r]) => commits[String(r.block)]?.attempt === r.attempt));
  }

  /**
   * Records why reps of a failed attempt were not measured, with the last lines of the ranks that
   * failed (at most RANK_OUTPUT_RECORDS_MAX per experiment); returns the rep fields written (-1:
   * the experiment is gone).
   */
  async failReps(
    experiment: string,
    block: number,
    attempt: number,
    reps: FailedRep[],
    outputs: readonly RankOutputTail[] = [],
  ): Promise<number> {
    if (reps.length === 0 && outputs.length === 0) return 0;
    const args: (string | number)[] = [String(block), attempt, RANK_OUTPUT_RECORDS_MAX, outputs.length];
    for (const o of outputs) args.push(rankOutputField(o), JSON.stringify(RankOutputTailSchema.parse(o)));
    for (const f of reps) args.push(repKey(f), failedJson(f, attempt));
    return Number(
      await runScript(
        this.redis,
        'fail-block',
        [
          this.keys.failed(experiment),
          this.keys.commits(experiment),
          this.keys.exp(experiment),
          this.keys.rankOutput(experiment),
        ],
        args,
      ),
    );
  }

  /** The failed ranks' last lines (store/lua/fail-block.lua), field `<block>/<attempt>/<rank>`. */
  async rankOutputs(experiment: string): Promise<Record<string, RankOutputTail>> {
    const key = this.keys.rankOutput(experiment);
    return parseAll(await this.redis.hgetall(key), RankOutputTailSchema, key);
  }

  /** The attempt of the block that committed, or null while none has. */
  async committedAttempt(experiment: string, block: number): Promise<number | null> {
    return (await this.commitRecord(experiment, block))?.attempt ?? null;
  }

  /** The block's commit record (jobs/commit-record.ts), or null while no attempt committed it. */
  async commitRecord(experiment: string, block: number): Promise<CommitRecord | null> {
    const key = this.keys.commits(experiment);
    const raw = await this.redis.hget(key, String(block));
    return raw === null ? null : parseStored(CommitRecordSchema, raw, `${key} field ${block}`);
  }

  /** The fields ("<block>/<arm>/<rep>") that have a committed result. */
  async measuredFields(experiment: string): Promise<Set<string>> {
    return new Set(await this.redis.hkeys(this.keys.results(experiment)));
  }

  /**
   * Settling: records as not measured each of `reps` (a block's planned reps) that has neither a
   * result nor a failure record of the same or a newer attempt (store/lua/account-reps.lua).
   * Returns the fields written; -1 when the block is not stored ended at `attempt`.
   */
  async accountReps(experiment: string, block: number, attempt: number, reps: FailedRep[]): Promise<number> {
    if (reps.length === 0) return 0;
    const args: (string | number)[] = [String(block), attempt];
    for (const r of reps) args.push(repKey(r), failedJson(r, attempt));
    return Number(
      await runScript(
        this.redis,
        'account-reps',
        [this.keys.results(experiment), this.keys.failed(experiment), this.keys.sched.blocks(experiment)],
        args,
      ),
    );
  }

  /** The committed results of these fields (`<block>/<arm>/<rep>`) only, in one read; fields without one are left out. */
  async repResults(experiment: string, fields: string[]): Promise<RepResult[]> {
    if (fields.length === 0) return [];
    const key = this.keys.results(experiment);
    const raw = await this.redis.hmget(key, ...fields);
    const some: Record<string, string> = {};
    for (const [i, v] of raw.entries()) if (v !== null) some[fields[i] as string] = v;
    return Object.values(parseAll(some, RepResultSchema, key));
  }

  async results(experiment: string): Promise<Record<string, RepResult>> {
    return parseAll(
      await this.redis.hgetall(this.keys.results(experiment)),
      RepResultSchema,
      this.keys.results(experiment),
    );
  }
  async failed(experiment: string): Promise<Record<string, FailedRecord>> {
    return parseAll(
      await this.redis.hgetall(this.keys.failed(experiment)),
      FailedRecordSchema,
      this.keys.failed(experiment),
    );
  }
  async gates(experiment: string): Promise<Record<string, GateResult>> {
    return parseAll(
      await this.redis.hgetall(this.keys.gates(experiment)),
      GateResultSchema,
      this.keys.gates(experiment),
    );
  }
  async commits(experiment: string): Promise<Record<string, CommitRecord>> {
    return parseAll(
      await this.redis.hgetall(this.keys.commits(experiment)),
      CommitRecordSchema,
      this.keys.commits(experiment),
    );
  }
}

/** The lease fence's refusal (include/lease-fence.lua): { 0, 'EPOCH', i, epoch held ('' when gone) }. */
const EpochRefusalSchema = z.tuple([z.literal(0), z.literal('EPOCH'), z.int().min(1), z.string()]);

/** commit-block.lua's reply, one tuple per outcome of its header. */
const CommitBlockReplySchema = z.union([
  z.tuple([z.literal(1)]),
  EpochRefusalSchema,
  z.tuple([z.literal(0), z.literal('GONE')]),
  z.tuple([z.literal(0), z.literal('COMMITTED'), z.string()]),
]);

/** commit-probes.lua's reply, one tuple per outcome of its header. */
const CommitProbesReplySchema = z.union([
  z.tuple([z.literal(1)]),
  EpochRefusalSchema,
  z.tuple([z.literal(0), z.literal('GONE')]),
  z.tuple([z.literal(0), z.literal('COMMITTED')]),
]);

/**
 * Decodes commit-block.lua's reply for a commit over `cards`; `commitsField` names where a prior
 * commit rests. A prior commit byte for byte `record` (the one this call sent: it carries its
 * attempt, epoch and the millisecond it was made) is this call's own: the script ran, its reply
 * was lost with the connection (a Redis restarted with its AOF) and ioredis sent the command again.
 */
export function decodeCommitBlock(reply: unknown, cards: string[], commitsField: string, record: string): CommitResult {
  const r = checkStored(CommitBlockReplySchema, reply, 'reply of store/lua/commit-block.lua');
  if (r[0] === 1) return { committed: true };
  if (r[1] === 'GONE') return { committed: false, why: 'gone' };
  if (r[1] === 'EPOCH')
    return { committed: false, why: 'epoch', card: cards[r[2] - 1] ?? '?', holder: r[3] === '' ? null : Number(r[3]) };
  if (r[2] === record) return { committed: true };
  const prior = parseStored(CommitRecordSchema, r[2], commitsField);
  return {
    committed: false,
    why: 'committed',
    prior: { attempt: prior.attempt, epoch: prior.epoch, host: prior.host },
  };
}

/** A failure record as stored: the rep it is, reason, attempt, and the kind when it is not a plain failure. */
function failedJson(f: FailedRep, attempt: number): string {
  // a reason quotes a rank's error: bounded here, so a 1 MiB error on every rep of a block is not
  // copied into Redis once per rep (jobs/rank-text.ts; escaping is idempotent, so readers may escape again)
  return JSON.stringify(FailedRecordSchema.parse({ ...f, reason: escapeRankText(f.reason), attempt }));
}

/** Every field of a hash through its schema: a record that does not match is never analyzed. */
function parseAll<T>(h: Record<string, string>, schema: z.ZodType<T>, key: string): Record<string, T> {
  const out: Record<string, T> = {};
  for (const [field, raw] of Object.entries(h)) {
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch (err) {
      throw new OrchError('RESULT_MALFORMED', `${key} field ${field} is not JSON: ${quoteLine(raw)}`, { cause: err });
    }
    const r = schema.safeParse(json);
    if (!r.success)
      throw new OrchError('RESULT_MALFORMED', `${key} field ${field}: ${describeIssues(r.error)}: ${quoteLine(raw)}`, {
        cause: r.error,
      });
    out[field] = r.data;
  }
  return out;
}
