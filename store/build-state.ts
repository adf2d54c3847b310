/**
 * The build lock's state, mirrored to Redis for `orch status` and the dashboard. The flock is
 * the truth; this is a view of it. Keys (store/keys.ts `build`, prefix `orch` in production):
 *
 *   orch:build:hosts                     set of host names that ever built
 *   orch:build:<host>:holder             hash { id, key, recipe, experiment, pid, since, cmd }, TTL
 *   orch:build:<host>:waiters            zset request id → arrival time (ms)
 *   orch:build:<host>:waiter:<id>        JSON { key, recipe, experiment, pid, since }, TTL
 *   orch:build:recipe:<recipe>:durations list of JSON { ms, ok, key, host, at }, newest first, 20 kept
 *
 * Holder and waiter keys carry a TTL refreshed while the process lives, so a worker killed with
 * -9 drops out of the view within TTL_MS (the lock itself is free at once). Positions are arrival
 * order; the kernel does not promise FIFO wake-ups, so a position is an estimate.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { parseStored } from '../jobs/parse-stored.ts';
import { type BuildKeys, orchKeys } from './keys.ts';

export const BUILD_STATE_TTL_MS = 15_000;
const DURATIONS_KEPT = 20;

/** One build request, as a waiter key holds it. */
export const BuildRequestInfoSchema = z.object({
  id: z.string(),
  key: z.string(),
  recipe: z.string(),
  experiment: z.string(),
  pid: z.int(),
  since: z.number(),
});
export type BuildRequestInfo = z.infer<typeof BuildRequestInfoSchema>;

/** One entry of a recipe's durations list (the readers use ms and ok). */
const BuildDurationSchema = z.object({
  ms: z.number().nonnegative(),
  ok: z.boolean(),
  key: z.string().optional(),
  host: z.string().optional(),
  at: z.number().optional(),
});

/** Writes one request's part of the view; every call is best effort (see BuildCache). */
export class BuildStateMirror {
  private readonly k: BuildKeys;

  constructor(
    private readonly redis: Redis,
    private readonly host: string,
    prefix?: string,
  ) {
    this.k = orchKeys(prefix).build;
  }

  async waiting(r: BuildRequestInfo): Promise<void> {
    await this.redis
      .multi()
      .sadd(this.k.hosts, this.host)
      .zadd(this.k.waiters(this.host), r.since, r.id)
      .set(this.k.waiter(this.host, r.id), JSON.stringify(r), 'PX', BUILD_STATE_TTL_MS)
      .exec();
  }

  /** The request's place in line for the lock by arrival (1: next to take it); null: not waiting. */
  async position(r: BuildRequestInfo): Promise<number | null> {
    const rank = await this.redis.zrank(this.k.waiters(this.host), r.id);
    return rank === null ? null : rank + 1;
  }

  async refreshWaiting(r: BuildRequestInfo): Promise<void> {
    await this.redis.pexpire(this.k.waiter(this.host, r.id), BUILD_STATE_TTL_MS);
  }

  async holding(r: BuildRequestInfo, cmd: string, since: number): Promise<void> {
    await this.redis
      .multi()
      .zrem(this.k.waiters(this.host), r.id)
      .del(this.k.waiter(this.host, r.id))
      .del(this.k.holder(this.host))
      .hset(this.k.holder(this.host), {
        id: r.id,
        key: r.key,
        recipe: r.recipe,
        experiment: r.experiment,
        pid: String(r.pid),
        since: String(since),
        cmd,
      })
      .pexpire(this.k.holder(this.host), BUILD_STATE_TTL_MS)
      .exec();
  }

  async refreshHolding(): Promise<void> {
    await this.redis.pexpire(this.k.holder(this.host), BUILD_STATE_TTL_MS);
  }

  /** The request is done (built, shared, failed or cancelled); `duration` when it built. */
  async done(r: BuildRequestInfo, duration?: { ms: number; ok: boolean }): Promise<void> {
    const m = this.redis.multi().zrem(this.k.waiters(this.host), r.id).del(this.k.waiter(this.host, r.id));
    if (duration) {
      m.lpush(
        this.k.durations(r.recipe),
        JSON.stringify({ ms: duration.ms, ok: duration.ok, key: r.key, host: this.host, at: Date.now() }),
      );
      m.ltrim(this.k.durations(r.recipe), 0, DURATIONS_KEPT - 1);
    }
    await m.exec();
    // Only our own holder entry is removed: a later holder may already have written its own.
    const holderId = await this.redis.hget(this.k.holder(this.host), 'id');
    if (holderId === r.id) await this.redis.del(this.k.holder(this.host));
  }
}

export interface PastBuilds {
  /** Successful builds of the same recipe (cmd, artifacts, flags) at any commit. */
  n: number;
  median_ms: number | null;
  last_ms: number | null;
}

export interface BuildHolderView {
  key: string;
  experiment: string;
  pid: number;
  since: number;
  elapsed_ms: number;
  cmd: string;
  past: PastBuilds;
}

export interface BuildWaiterView {
  position: number;
  key: string;
  experiment: string;
  pid: number;
  since: number;
  waited_ms: number;
  past: PastBuilds;
}

export interface HostBuildState {
  host: string;
  holder: BuildHolderView | null;
  waiters: BuildWaiterView[];
}

async function pastBuilds(redis: Redis, k: BuildKeys, recipe: string): Promise<PastBuilds> {
  const key = k.durations(recipe);
  const raw = await redis.lrange(key, 0, -1);
  const ok = raw
    .map((s, i) => parseStored(BuildDurationSchema, s, `${key} entry ${i}`))
    .filter((d) => d.ok)
    .map((d) => d.ms);
  if (ok.length === 0) return { n: 0, median_ms: null, last_ms: null };
  const sorted = [...ok].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { n: ok.length, median_ms: median, last_ms: ok[0]! };
}

/** The build lock's state on every host, for `orch status` and the dashboard. */
export async function readBuildState(
  redis: Redis,
  opts: { prefix?: string; now?: number } = {},
): Promise<HostBuildState[]> {
  const k = orchKeys(opts.prefix).build;
  const now = opts.now ?? Date.now();
  const hosts = (await redis.smembers(k.hosts)).sort();
  const out: HostBuildState[] = [];
  for (const host of hosts) {
    const h = await redis.hgetall(k.holder(host));
    let holder: BuildHolderView | null = null;
    if (h.id !== undefined) {
      const since = Number(h.since);
      holder = {
        key: h.key!,
        experiment: h.experiment!,
        pid: Number(h.pid),
        since,
        elapsed_ms: Math.max(0, now - since),
        cmd: h.cmd!,
        past: await pastBuilds(redis, k, h.recipe!),
      };
    }
    const ids = await redis.zrange(k.waiters(host), '0', '-1');
    const waiters: BuildWaiterView[] = [];
    const stale: string[] = [];
    const infos = ids.length === 0 ? [] : await redis.mget(ids.map((id) => k.waiter(host, id)));
    for (const [i, raw] of infos.entries()) {
      if (raw === null) {
        stale.push(ids[i]!);
        continue;
      }
      const w = parseStored(BuildRequestInfoSchema, raw, k.waiter(host, ids[i]!));
      waiters.push({
        position: waiters.length + 1,
        key: w.key,
        experiment: w.experiment,
        pid: w.pid,
        since: w.since,
        waited_ms: Math.max(0, now - w.since),
        past: await pastBuilds(redis, k, w.recipe),
      });
    }
    if (stale.length > 0) await redis.zrem(k.waiters(host), ...stale);
    out.push({ host, holder, waiters });
  }
  return out;
}

// Clamped at 0 by the readers above: `since` comes from another process's clock (Date.now() there),
// so a reader right after the write can see a few ms in the future ("-0.0 s").
const secs = (ms: number | null) => (ms === null ? '?' : `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`);
const typical = (p: PastBuilds) =>
  p.n === 0 ? 'no past build of this recipe' : `similar builds took ${secs(p.median_ms)} (median of ${p.n})`;

/** Lines for `orch status`: per host, the holder and each waiter with its position. */
export function formatBuildState(state: HostBuildState[]): string[] {
  const lines: string[] = [];
  for (const s of state) {
    if (!s.holder && s.waiters.length === 0) {
      lines.push(`build lock ${s.host}: free`);
      continue;
    }
    lines.push(
      s.holder
        ? `build lock ${s.host}: held by ${s.holder.experiment || '-'} (pid ${s.holder.pid}, key ${s.holder.key.slice(0, 12)}) for ${secs(s.holder.elapsed_ms)}; ${typical(s.holder.past)}`
        : `build lock ${s.host}: free, ${s.waiters.length} waiting`,
    );
    for (const w of s.waiters) {
      lines.push(
        `  #${w.position} ${w.experiment || '-'} (pid ${w.pid}, key ${w.key.slice(0, 12)}) waiting ${secs(w.waited_ms)}; ${typical(w.past)}`,
      );
    }
  }
  return lines;
}
