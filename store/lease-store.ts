/**
 * Card leases: an exclusive, expiring claim on a card with an epoch as fencing token
 * (docs/ARCHITECTURE.md "Redis layer"; the per-card flock is the second layer). Written only
 * by the Lua scripts in ./lua: a gang is granted all N cards or none; only its owner host renews it, and
 * only under its epoch; release deletes what is still held under the epoch; revoke deletes and
 * publishes on `<prefix>:lease-revoked` so the owning worker kills the gang's ranks at once.
 *
 * Who calls what: the scheduler acquires and revokes; the worker renews while the
 * ranks live and releases at the end of the block. Every method is one round trip.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { checkStored } from '../jobs/parse-stored.ts';
import { type OrchKeys, orchKeys } from './keys.ts';
import { runScript } from './scripts.ts';

export interface Lease {
  card: string;
  owner: string;
  epoch: number;
  experiment: string;
  block: number;
  /** unix ms by Redis' clock */
  expires: number;
}

export interface AcquireGangInput {
  /** one card id per rank; order is kept */
  cards: string[];
  /** the host whose worker runs the gang: only it may renew */
  owner: string;
  ttlMs: number;
  experiment: string;
  block: number;
}

export type AcquireResult =
  | { granted: true; epoch: number }
  | { granted: false; busy: { card: string; owner: string; epoch: number; experiment: string; block: number } };

export interface GangRef {
  cards: string[];
  epoch: number;
}

export type RenewResult = { ok: true } | { ok: false; card: string; reason: string };

/** Published on keys.leaseRevoked by revoke(). */
export interface RevokeMessage {
  cards: string[];
  epochs: number[];
  reason: string;
}

export class LeaseStore {
  readonly keys: OrchKeys;

  constructor(
    private readonly redis: Redis,
    opts: { prefix?: string } = {},
  ) {
    this.keys = orchKeys(opts.prefix);
  }

  async acquireGang(input: AcquireGangInput): Promise<AcquireResult> {
    checkCards(input.cards);
    if (new Set(input.cards).size !== input.cards.length) {
      throw new Error(`acquireGang: a card appears twice in ${JSON.stringify(input.cards)}`);
    }
    const reply = await runScript(
      this.redis,
      'acquire-gang',
      [this.keys.leaseEpoch, ...input.cards.map((c) => this.keys.lease(c))],
      [input.owner, Math.ceil(input.ttlMs), input.experiment, input.block],
    );
    return decodeAcquireGang(reply, input.cards);
  }

  /** Extends every lease of the gang by ttlMs, or none (then the gang is lost: kill its ranks). */
  async renew(gang: GangRef & { owner: string; ttlMs: number }): Promise<RenewResult> {
    checkCards(gang.cards);
    const reply = checkStored(
      RenewReplySchema,
      await runScript(
        this.redis,
        'renew-gang',
        gang.cards.map((c) => this.keys.lease(c)),
        [gang.owner, gang.epoch, Math.ceil(gang.ttlMs)],
      ),
      'reply of store/lua/renew-gang.lua',
    );
    if (reply[0] === 1) return { ok: true };
    return { ok: false, card: gang.cards[reply[1] - 1] ?? '?', reason: reply[2] };
  }

  /** Deletes the leases still held under gang.epoch; returns how many. */
  async release(gang: GangRef): Promise<number> {
    checkCards(gang.cards);
    return Number(
      await runScript(
        this.redis,
        'release-gang',
        gang.cards.map((c) => this.keys.lease(c)),
        [gang.epoch],
      ),
    );
  }

  /**
   * Deletes the leases (those under `epoch`, or whatever holds them when epoch is omitted) and
   * publishes a RevokeMessage so the owner kills the ranks now rather than at its next renew.
   */
  async revoke(input: { cards: string[]; epoch?: number; reason: string }): Promise<number> {
    checkCards(input.cards);
    return Number(
      await runScript(
        this.redis,
        'revoke-gang',
        input.cards.map((c) => this.keys.lease(c)),
        [input.epoch === undefined ? '*' : input.epoch, this.keys.leaseRevoked, input.reason, ...input.cards],
      ),
    );
  }

  async get(card: string): Promise<Lease | null> {
    return leaseOf(card, await this.redis.hgetall(this.keys.lease(card)));
  }

  /** Which of `cards` are leased now (by anyone, under any epoch), in one call (store/lua/leased-cards.lua). */
  async leased(cards: string[]): Promise<Set<string>> {
    if (cards.length === 0) return new Set();
    const reply = checkStored(
      LeasedCardsReplySchema,
      await runScript(
        this.redis,
        'leased-cards',
        cards.map((c) => this.keys.lease(c)),
        [],
      ),
      'reply of store/lua/leased-cards.lua',
    );
    return new Set(reply.flatMap((i) => cards[i - 1] ?? []));
  }

  /**
   * The leases currently held on `cards` (missing cards are free), in one round trip: the grant
   * pass reads every card of the cluster, and a round trip per card made it slower than the
   * grants it decides.
   */
  async held(cards: string[]): Promise<Lease[]> {
    if (cards.length === 0) return [];
    const p = this.redis.pipeline();
    for (const c of cards) p.hgetall(this.keys.lease(c));
    const replies = (await p.exec()) ?? [];
    return cards.flatMap((c, i) => {
      const [err, h] = replies[i] ?? [new Error('no reply'), null];
      if (err) throw err;
      const l = leaseOf(c, h as Record<string, string>);
      return l ? [l] : [];
    });
  }
}

/** acquire-gang.lua: { 1, epoch } granted, or { 0, i, owner, epoch, experiment, block } of the card held. */
const AcquireReplySchema = z.union([
  z.tuple([z.literal(1), z.int()]),
  z.tuple([z.literal(0), z.int().min(1), z.string(), z.string(), z.string(), z.string()]),
]);
/** renew-gang.lua: { 1 } extended, or { 0, i, reason }. */
const RenewReplySchema = z.union([z.tuple([z.literal(1)]), z.tuple([z.literal(0), z.int().min(1), z.string()])]);
/** leased-cards.lua: the 1-based indexes of the lease keys that exist. */
const LeasedCardsReplySchema = z.array(z.int().min(1));

/** Decodes acquire-gang.lua's reply for a gang of `cards`. */
export function decodeAcquireGang(reply: unknown, cards: string[]): AcquireResult {
  const r = checkStored(AcquireReplySchema, reply, 'reply of store/lua/acquire-gang.lua');
  if (r[0] === 1) return { granted: true, epoch: r[1] };
  const [, i, owner, epoch, experiment, block] = r;
  return {
    granted: false,
    busy: { card: cards[i - 1] ?? '?', owner, epoch: Number(epoch), experiment, block: Number(block) },
  };
}

function leaseOf(card: string, h: Record<string, string>): Lease | null {
  if (!h.epoch) return null;
  return {
    card,
    owner: h.owner ?? '',
    epoch: Number(h.epoch),
    experiment: h.experiment ?? '',
    block: Number(h.block),
    expires: Number(h.expires),
  };
}

function checkCards(cards: string[]): void {
  if (cards.length === 0) throw new Error('a gang needs at least one card');
}
