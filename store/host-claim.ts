/**
 * One worker per host name. A host name is the unit everything else counts by: its cards'
 * registration, its queue, its alive key, its card leases. Two workers under one name would both
 * take that host's jobs and run two gangs on one card, and each would re-register the other's
 * cards away. So a worker claims its name before it registers anything:
 *
 *   <prefix>:host:<name>:claim   hash { token, pid, machine, started }, PX TTL (two heartbeats)
 *
 * taken atomically (store/lua/host-claim.lua) by a random token per worker process, renewed by
 * the worker's heartbeat, released on a clean stop (host-claim-release.lua). A worker killed
 * without a stop leaves its claim to expire two heartbeats after its last one. A new worker on
 * the same machine whose holder's pid is gone (the restart after a kill -9) waits that long and
 * takes the name; every other holder is a live worker, and the new one is refused at once.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { UserInputError } from '../jobs/errors.ts';
import { checkStored } from '../jobs/parse-stored.ts';
import { orchKeys } from './keys.ts';
import { runScript } from './scripts.ts';

/** Who holds a host name's claim. */
export interface ClaimHolder {
  pid: number;
  machine: string;
  started: number;
}

/** host-claim.lua: { 1 } held, or { 0, pid, machine, started } of the holder (as stored: strings). */
const HostClaimReplySchema = z.union([
  z.tuple([z.literal(1)]),
  z.tuple([z.literal(0), z.string(), z.string(), z.string()]),
]);

export class HostClaim {
  private readonly key: string;
  private readonly token = randomBytes(12).toString('hex');
  private readonly started = Date.now();

  constructor(
    private readonly redis: Redis,
    readonly host: string,
    opts: { prefix?: string } = {},
  ) {
    this.key = orchKeys(opts.prefix).hostClaim(host);
  }

  /** Takes or keeps the claim for ttlMs; the holder when another worker has it. */
  async takeOrKeep(ttlMs: number): Promise<ClaimHolder | null> {
    const reply = checkStored(
      HostClaimReplySchema,
      await runScript(
        this.redis,
        'host-claim',
        [this.key],
        [this.token, process.pid, hostname(), this.started, Math.ceil(ttlMs)],
      ),
      'reply of store/lua/host-claim.lua',
    );
    if (reply[0] === 1) return null;
    return { pid: Number(reply[1]), machine: reply[2], started: Number(reply[3]) };
  }

  /**
   * Takes the claim at start, or refuses: another worker serves this host name. The refusal
   * names that worker (pid, machine, since when) and how long a dead one's claim lasts. A holder
   * that died on this machine is waited out (its claim ends within `ttlMs`); `onWait` is told once.
   */
  async take(ttlMs: number, onWait: (holder: ClaimHolder) => void = () => {}): Promise<void> {
    const until = Date.now() + ttlMs + 1000;
    let told = false;
    for (;;) {
      const holder = await this.takeOrKeep(ttlMs);
      if (holder === null) return;
      if (!diedHere(holder) || Date.now() > until) return this.refuse(holder);
      if (!told) onWait(holder);
      told = true;
      await new Promise((resolve) => setTimeout(resolve, Math.max(20, Math.min(200, ttlMs / 8))));
    }
  }

  private async refuse(holder: ClaimHolder): Promise<never> {
    const left = await this.redis.pttl(this.key);
    throw new UserInputError(
      'HOST_CLAIMED',
      `host name "${this.host}" is already served by the worker pid ${holder.pid} on ${holder.machine} (started ${new Date(holder.started).toISOString()}); one worker per host name`,
      {
        hint: `stop that worker (\`orch hosts down\`, or kill ${holder.pid} on ${holder.machine}) or give this one another --host; a worker killed without stopping holds the name until its claim expires, ${Math.max(0, Math.ceil(left / 1000))} s from now at most`,
      },
    );
  }

  /** Gives the claim up (a clean stop); false when this worker no longer held it. */
  async release(): Promise<boolean> {
    return Number(await runScript(this.redis, 'host-claim-release', [this.key], [this.token])) === 1;
  }
}

/** The holder ran on this machine and its pid is gone (EPERM: it exists, owned by someone else). */
function diedHere(holder: ClaimHolder): boolean {
  if (holder.machine !== hostname() || !Number.isInteger(holder.pid) || holder.pid <= 0) return false;
  try {
    process.kill(holder.pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
