/**
 * The scheduler leader lease: one `orch serve` leads, others wait and take over within
 * ttl + interval of the leader's death. Renewal is a Lua compare-and-extend (lua/leader-renew.lua),
 * so a leader that stalled past its TTL cannot extend a lease someone else took; it steps down.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import { schedulerKeys } from './scheduler-keys.ts';

const RENEW = readFileSync(new URL('./lua/leader-renew.lua', import.meta.url), 'utf8');
const RELEASE = readFileSync(new URL('./lua/leader-release.lua', import.meta.url), 'utf8');

export interface LeaderLeaseOptions {
  prefix: string;
  ttlMs?: number;
  intervalMs?: number;
  id?: string;
}

export class LeaderLease {
  readonly id: string;
  private readonly key: string;
  private readonly ttlMs: number;
  private readonly intervalMs: number;
  private timer: NodeJS.Timeout | null = null;
  private leading = false;
  private stopped = false;

  constructor(
    private readonly redis: Redis,
    opts: LeaderLeaseOptions,
  ) {
    this.key = schedulerKeys(opts.prefix).leader;
    this.ttlMs = opts.ttlMs ?? 3000;
    this.intervalMs = opts.intervalMs ?? Math.max(100, Math.floor(this.ttlMs / 3));
    this.id = opts.id ?? `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** One compare-and-extend; true when this candidate leads after it. */
  async tryAcquire(): Promise<boolean> {
    const r = (await this.redis.eval(RENEW, 1, this.key, this.id, String(this.ttlMs))) as number;
    return r === 1;
  }

  /**
   * Campaigns until stopped: `onElected` when the lease is taken, `onDeposed` when a renewal
   * fails (lost to another or to Redis); then it campaigns again.
   */
  start(onElected: () => void, onDeposed: (why: string) => void): void {
    const tick = async () => {
      if (this.stopped) return;
      let held = false;
      let why = 'lease taken by another scheduler';
      try {
        held = await this.tryAcquire();
      } catch (err) {
        why = `cannot renew the leader lease: ${(err as Error).message}`;
      }
      if (this.stopped) return;
      if (held && !this.leading) {
        this.leading = true;
        onElected();
      } else if (!held && this.leading) {
        this.leading = false;
        onDeposed(why);
      }
      this.timer = setTimeout(tick, this.intervalMs);
    };
    void tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.leading) {
      this.leading = false;
      await this.redis.eval(RELEASE, 1, this.key, this.id).catch(() => undefined);
    }
  }

  /** The current leader's id, or null. */
  static async holder(redis: Redis, prefix: string): Promise<string | null> {
    return redis.get(schedulerKeys(prefix).leader);
  }
}
