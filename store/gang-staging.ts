/**
 * The keys a spread gang's parts meet on (jobs/spread-gang.ts), one set per block attempt, each
 * with a TTL so an attempt that died leaves nothing behind:
 *
 *   rendezvous  "HOST:PORT" where rank 0 listens, published by the leading part's worker
 *   staged      host → JSON StagedPart: each other part's results, staged under the gang's epoch
 *               (lua/stage-part.lua); the leading part commits them with its own in one
 *               commit-block call over every part's leases
 *   exchange    key → base64: rank 0's bytes of each exchange of a command gang (ranklib/PROTOCOL.md
 *               "Exchange"), published once (lua/publish-exchange.lua), read by every rank's worker;
 *               a single-host gang meets here too, so one path serves both
 *   capture-failed  "<op id>/<rank>" → host: the ranks that answered an op CAPTURE_FAILED, so that
 *               the parts block an arm only when every rank's capture failed
 *               (worker/spread-part.ts captureFailedEverywhere)
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { type GangHost, GangHostSchema } from '../jobs/commit-record.ts';
import { GateResultSchema } from '../jobs/gate-result.ts';
import { checkStored, parseStored } from '../jobs/parse-stored.ts';
import { type RankOrigin, RankOriginSchema } from '../jobs/rank-origin.ts';
import { RepResultSchema } from '../jobs/rep-result.ts';
import { type OrchKeys, orchKeys } from './keys.ts';
import type { CommitGate, CommitRep } from './result-store.ts';
import { runScript } from './scripts.ts';

export interface AttemptRef {
  experiment: string;
  block: number;
  attempt: number;
}

const StagedPartSchema = z.object({
  host: z.string(),
  cards: z.array(z.string()).min(1),
  reps: z.array(z.object({ block: z.int(), arm: z.string(), rep: z.int(), result: RepResultSchema })),
  gates: z.array(z.object({ block: z.int(), arm: z.string(), result: GateResultSchema })),
  ranks: z.array(RankOriginSchema),
  hosts: z.array(GangHostSchema),
});
export interface StagedPart {
  host: string;
  cards: string[];
  reps: CommitRep[];
  gates: CommitGate[];
  ranks: RankOrigin[];
  hosts: GangHost[];
}

export type StageResult = { staged: true } | { staged: false; card: string; holder: number | null };

/** publish-exchange.lua's reply: 1 published, 2 the same bytes already, 0 other bytes already. */
const PublishExchangeReplySchema = z.union([z.literal(0), z.literal(1), z.literal(2)]);

/** stage-part.lua's reply: { 1 } staged, or { 0, i, epoch held ('' when gone) } from its lease fence. */
const StagePartReplySchema = z.union([z.tuple([z.literal(1)]), z.tuple([z.literal(0), z.int().min(1), z.string()])]);

/** Decodes stage-part.lua's reply for a part of `cards`. */
export function decodeStagePart(reply: unknown, cards: string[]): StageResult {
  const r = checkStored(StagePartReplySchema, reply, 'reply of store/lua/stage-part.lua');
  if (r[0] === 1) return { staged: true };
  return { staged: false, card: cards[r[1] - 1] ?? '?', holder: r[2] === '' ? null : Number(r[2]) };
}

export class GangStaging {
  readonly keys: OrchKeys;

  constructor(
    private readonly redis: Redis,
    opts: { prefix?: string } = {},
  ) {
    this.keys = orchKeys(opts.prefix);
  }

  /** Where rank 0 of the attempt listens, for the other parts' ranks. */
  async publishRendezvous(ref: AttemptRef, address: string, ttlMs: number): Promise<void> {
    await this.redis.set(this.keys.rendezvous(ref.experiment, ref.block, ref.attempt), address, 'PX', Math.ceil(ttlMs));
  }

  /** The published `HOST:PORT`, or null while the leading part has not published it. */
  async rendezvousAddress(ref: AttemptRef): Promise<string | null> {
    return this.redis.get(this.keys.rendezvous(ref.experiment, ref.block, ref.attempt));
  }

  /**
   * Publishes rank 0's bytes of exchange `key`: 'published', 'same' (already there, the same
   * bytes) or 'other' (already there with other bytes: refused).
   */
  async publishExchange(
    ref: AttemptRef,
    key: string,
    data: Buffer,
    ttlMs: number,
  ): Promise<'published' | 'same' | 'other'> {
    const reply = await runScript(
      this.redis,
      'publish-exchange',
      [this.keys.exchange(ref.experiment, ref.block, ref.attempt)],
      [key, data.toString('base64'), Math.ceil(ttlMs)],
    );
    const r = checkStored(PublishExchangeReplySchema, reply, 'reply of store/lua/publish-exchange.lua');
    return r === 1 ? 'published' : r === 2 ? 'same' : 'other';
  }

  /** Rank 0's bytes of exchange `key`, or null while they are not published. */
  async exchanged(ref: AttemptRef, key: string): Promise<Buffer | null> {
    const raw = await this.redis.hget(this.keys.exchange(ref.experiment, ref.block, ref.attempt), key);
    return raw === null ? null : Buffer.from(raw, 'base64');
  }

  /** Marks `ranks` (this part's, on `host`) as having answered op `opId` CAPTURE_FAILED. */
  async markCaptureFailed(ref: AttemptRef, opId: string, ranks: number[], host: string, ttlMs: number): Promise<void> {
    const key = this.keys.captureFailed(ref.experiment, ref.block, ref.attempt);
    await this.redis
      .multi()
      .hset(key, Object.fromEntries(ranks.map((r) => [`${opId}/${r}`, host])))
      .pexpire(key, Math.ceil(ttlMs))
      .exec();
  }

  /** Which of `ranks` answered op `opId` CAPTURE_FAILED so far. */
  async capturesFailed(ref: AttemptRef, opId: string, ranks: number[]): Promise<number[]> {
    if (ranks.length === 0) return [];
    const key = this.keys.captureFailed(ref.experiment, ref.block, ref.attempt);
    const hosts = await this.redis.hmget(key, ...ranks.map((r) => `${opId}/${r}`));
    return ranks.filter((_, i) => hosts[i] !== null);
  }

  /** Stages a part's results; refused when its leases are not held under `epoch`. */
  async stage(ref: AttemptRef, epoch: number, part: StagedPart, ttlMs: number): Promise<StageResult> {
    const json = JSON.stringify(StagedPartSchema.parse(part));
    const reply = await runScript(
      this.redis,
      'stage-part',
      [this.keys.staged(ref.experiment, ref.block, ref.attempt), ...part.cards.map((c) => this.keys.lease(c))],
      [epoch, part.host, json, Math.ceil(ttlMs)],
    );
    return decodeStagePart(reply, part.cards);
  }

  /** Every part staged for the attempt so far. */
  async staged(ref: AttemptRef): Promise<StagedPart[]> {
    const key = this.keys.staged(ref.experiment, ref.block, ref.attempt);
    const all = await this.redis.hgetall(key);
    return Object.entries(all).map(([host, raw]) => parseStored(StagedPartSchema, raw, `${key} field ${host}`));
  }

  /** The attempt's keys, once its block is committed or failed. */
  async forget(ref: AttemptRef): Promise<void> {
    await this.redis.del(
      this.keys.rendezvous(ref.experiment, ref.block, ref.attempt),
      this.keys.staged(ref.experiment, ref.block, ref.attempt),
      this.keys.exchange(ref.experiment, ref.block, ref.attempt),
      this.keys.captureFailed(ref.experiment, ref.block, ref.attempt),
    );
  }
}
