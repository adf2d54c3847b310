/**
 * The card registry: which cards each host's worker offers, and whether that worker is alive.
 *
 *   <prefix>:cards              hash card id → JSON Card (with its worker's version and capabilities)
 *   <prefix>:host:<name>        hash { pid, started, cards (JSON id list), version, slurm (JSON, a worker under Slurm: its job, jobs/slurm-allocation.ts),
 *                                      seen (ms, the last registration or heartbeat), ttl_ms (its alive TTL: two heartbeats) }
 *   <prefix>:host:<name>:alive  "1" with a PX TTL, refreshed by the worker's heartbeat
 *
 * A host not seen for HOST_GONE_AFTER_HEARTBEATS heartbeats, or a Slurm allocation's host once its
 * job's end has passed and it no longer beats, is gone: `all()` leaves its cards out, so it leaves
 * `orch status`, the dashboard and /metrics (a dead host would otherwise stay there forever, one
 * per Slurm allocation). Nothing is deleted: a worker that comes back registers again.
 *
 * A card is live while its host's alive key exists. Registration is not contended (one worker
 * per host), so it is a MULTI, not a script; leases (lease-store.ts) are what is contended.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { type Card, CardSchema } from '../jobs/card.ts';
import { parseStored } from '../jobs/parse-stored.ts';
import { type SlurmProvenance, SlurmProvenanceSchema } from '../jobs/slurm-allocation.ts';
import type { Capability } from '../jobs/worker-capabilities.ts';
import { type OrchKeys, orchKeys } from './keys.ts';

export { type Card, CardSchema } from '../jobs/card.ts';

export interface HostInfo {
  host: string;
  alive: boolean;
  pid: number | null;
  started: number | null;
  cards: string[];
  /** the Slurm job the host's worker runs in, or null */
  slurm: SlurmProvenance | null;
}

/** A host that has not beaten for this many heartbeats (its alive TTL is two) is gone. */
export const HOST_GONE_AFTER_HEARTBEATS = 10;

/** What decides whether a host is gone, as its hash and alive key hold it. */
export interface HostSighting {
  alive: boolean;
  /** the last registration or heartbeat (ms); null when unknown (an older worker: its start) */
  seen: number | null;
  /** its alive TTL (ms), two heartbeats; null when unknown */
  ttlMs: number | null;
  /** a Slurm allocation's end (ms), or null */
  slurmEnd: number | null;
}

/** Whether a host is gone from every listing (see the file comment); a live host never is. */
export function hostGone(h: HostSighting, now: number): boolean {
  if (h.alive) return false;
  if (h.slurmEnd !== null && now > h.slurmEnd) return true;
  if (h.seen === null || h.ttlMs === null) return false;
  return now - h.seen > (HOST_GONE_AFTER_HEARTBEATS * h.ttlMs) / 2;
}

/** The allocation's end a host's `slurm` field holds; null when none or unreadable. */
function slurmEnd(field: string): number | null {
  try {
    return SlurmProvenanceSchema.safeParse(JSON.parse(field)).data?.end ?? null;
  } catch {
    return null;
  }
}

/** The `cards` field of a host's hash: the ids it registered, in its order. */
const CardIdsSchema = z.array(z.string().min(1));

export class CardRegistry {
  readonly keys: OrchKeys;

  constructor(
    private readonly redis: Redis,
    opts: { prefix?: string } = {},
  ) {
    this.keys = orchKeys(opts.prefix);
  }

  /** Replaces the host's cards with `cards` and marks the host alive for ttlMs. */
  async register(
    host: string,
    cards: Card[],
    opts: { ttlMs: number; pid: number; version?: string; caps?: Capability[]; slurm?: SlurmProvenance },
  ): Promise<void> {
    for (const c of cards) {
      if (c.host !== host) throw new Error(`card ${c.id} belongs to host ${c.host}, not ${host}`);
    }
    const stale = (await this.registered())
      .filter((c) => c.host === host && !cards.some((n) => n.id === c.id))
      .map((c) => c.id);
    const m = this.redis.multi();
    if (stale.length > 0) m.hdel(this.keys.cards, ...stale);
    // every card carries its worker's version: the grant planner never mixes two in one gang
    // and what that worker allows (jobs/worker-capabilities.ts): the scheduler grants only what it may run
    for (const c of cards)
      m.hset(
        this.keys.cards,
        c.id,
        JSON.stringify(
          CardSchema.parse({
            ...c,
            ...(opts.version ? { version: opts.version } : {}),
            ...(opts.caps?.length ? { caps: opts.caps } : {}),
          }),
        ),
      );
    m.del(this.keys.host(host));
    m.hset(this.keys.host(host), {
      pid: String(opts.pid),
      started: String(Date.now()),
      cards: JSON.stringify(cards.map((c) => c.id)),
      version: opts.version ?? '',
      seen: String(Date.now()),
      ttl_ms: String(Math.ceil(opts.ttlMs)),
      ...(opts.slurm ? { slurm: JSON.stringify(SlurmProvenanceSchema.parse(opts.slurm)) } : {}),
    });
    m.set(this.keys.hostAlive(host), '1', 'PX', Math.ceil(opts.ttlMs));
    await m.exec();
  }

  /** Refreshes the host's alive key; false when it had already expired (the host looked dead). */
  async heartbeat(host: string, ttlMs: number): Promise<boolean> {
    await this.redis.hset(this.keys.host(host), { seen: String(Date.now()), ttl_ms: String(Math.ceil(ttlMs)) });
    const r = await this.redis.set(this.keys.hostAlive(host), '1', 'PX', Math.ceil(ttlMs), 'XX');
    if (r === 'OK') return true;
    await this.redis.set(this.keys.hostAlive(host), '1', 'PX', Math.ceil(ttlMs));
    return false;
  }

  /** Marks the host dead at once (graceful stop); its cards stay registered but not live. */
  async goOffline(host: string): Promise<void> {
    await this.redis.del(this.keys.hostAlive(host));
  }

  /** Every registered card, live or not, but those of hosts gone (hostGone). */
  async all(now = Date.now()): Promise<Card[]> {
    const cards = await this.registered();
    const hosts = [...new Set(cards.map((c) => c.host))];
    if (hosts.length === 0) return cards;
    // every host's sighting in one round trip: the grant pass reads them on each pass
    const p = this.redis.pipeline();
    for (const host of hosts)
      p.exists(this.keys.hostAlive(host)).hmget(this.keys.host(host), 'seen', 'ttl_ms', 'started', 'slurm');
    const replies = (await p.exec()) ?? [];
    for (const [err] of replies) if (err) throw err;
    const gone = new Set(
      hosts.filter((_host, i) => {
        const [seen, ttl, started, slurm] = replies[2 * i + 1]![1] as (string | null)[];
        const end = slurm ? slurmEnd(slurm) : null;
        const when = seen ?? started;
        return hostGone(
          {
            alive: replies[2 * i]![1] === 1,
            seen: when ? Number(when) : null,
            ttlMs: ttl ? Number(ttl) : null,
            slurmEnd: end,
          },
          now,
        );
      }),
    );
    return gone.size === 0 ? cards : cards.filter((c) => !gone.has(c.host));
  }

  /**
   * Every card in the registry, of gone hosts too (a host registering again replaces its own). A
   * field that is not a card (not JSON, or not of its schema: anyone who reaches Redis may write
   * one) is no card: it once threw here, out of the scheduler's grant pass and `orch status`.
   */
  private async registered(): Promise<Card[]> {
    const h = await this.redis.hgetall(this.keys.cards);
    return Object.entries(h).flatMap(([field, v]) => {
      try {
        return [parseStored(CardSchema, v, `${this.keys.cards} field ${field}`)];
      } catch {
        return [];
      }
    });
  }

  /** Cards whose host heartbeats, optionally of one host; ordered by host, then index. */
  async liveCards(host?: string): Promise<Card[]> {
    return this.liveOf((await this.all()).filter((c) => host === undefined || c.host === host));
  }

  /** Those of `cards` (read by `all`) whose host heartbeats; ordered by host, then index. */
  async liveOf(cards: Card[]): Promise<Card[]> {
    const hosts = [...new Set(cards.map((c) => c.host))];
    // every host's alive key in one round trip: the grant pass reads them all on each pass
    const p = this.redis.pipeline();
    for (const h of hosts) p.exists(this.keys.hostAlive(h));
    const replies = hosts.length === 0 ? [] : ((await p.exec()) ?? []);
    for (const [err] of replies) if (err) throw err;
    const alive = new Set(hosts.filter((_, i) => replies[i]?.[1] === 1));
    return cards
      .filter((c) => alive.has(c.host))
      .sort((a, b) => (a.host === b.host ? a.index - b.index : a.host < b.host ? -1 : 1));
  }

  /** Live cards grouped by host. */
  async liveCardsByHost(): Promise<Map<string, Card[]>> {
    const out = new Map<string, Card[]>();
    for (const c of await this.liveCards()) {
      const list = out.get(c.host) ?? [];
      list.push(c);
      out.set(c.host, list);
    }
    return out;
  }

  async hostInfo(host: string): Promise<HostInfo> {
    const key = this.keys.host(host);
    const [h, alive] = await Promise.all([this.redis.hgetall(key), this.redis.exists(this.keys.hostAlive(host))]);
    return {
      host,
      alive: alive === 1,
      pid: h.pid ? Number(h.pid) : null,
      started: h.started ? Number(h.started) : null,
      cards: h.cards ? parseStored(CardIdsSchema, h.cards, `${key} field cards`) : [],
      slurm: h.slurm ? parseStored(SlurmProvenanceSchema, h.slurm, `${key} field slurm`) : null,
    };
  }
}
