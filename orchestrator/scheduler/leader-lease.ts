/**
 * The scheduler leader lease: one `orch serve` leads, others wait and take over within
 * ttl + interval of the leader's death. Renewal is a Lua compare-and-extend (lua/leader-renew.lua),
 * so a leader that stalled past its TTL cannot extend a lease someone else took; it steps down.
 */
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { messageOf } from '../../jobs/message-of.ts';
import { checkStored } from '../../jobs/parse-stored.ts';
import { settleWithin } from '../../jobs/settle-within.ts';
import { orchKeys } from '../../store/keys.ts';
import { runScript } from '../../store/scripts.ts';

/** leader-renew.lua: 1 when this candidate leads after the call, 0 when another does. */
const LeaderRenewReplySchema = z.union([z.literal(0), z.literal(1)]);

const RELEASE_WAIT_MS = 2000;

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
    this.key = orchKeys(opts.prefix).sched.leader;
    this.ttlMs = opts.ttlMs ?? 3000;
    this.intervalMs = opts.intervalMs ?? Math.max(100, Math.floor(this.ttlMs / 3));
    this.id = opts.id ?? `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** One compare-and-extend; true when this candidate leads after it. */
  async tryAcquire(): Promise<boolean> {
    const r = checkStored(
      LeaderRenewReplySchema,
      await runScript(this.redis, 'leader-renew', [this.key], [this.id, this.ttlMs]),
      'reply of store/lua/leader-renew.lua',
    );
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
        why = `cannot renew the leader lease: ${messageOf(err)}`;
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

  /**
   * Forgets that this candidate leads (the Redis that held the lease lost its data): the next
   * tick that holds the lease elects it again, so a fresh term begins.
   */
  forget(): void {
    this.leading = false;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.leading) {
      this.leading = false;
      // the lease's TTL frees it anyway: a Redis that is gone never holds up a stop
      await settleWithin(runScript(this.redis, 'leader-release', [this.key], [this.id]), RELEASE_WAIT_MS);
    }
  }

  /** The current leader's id, or null. */
  static async holder(redis: Redis, prefix: string): Promise<string | null> {
    return redis.get(orchKeys(prefix).sched.leader);
  }
}
