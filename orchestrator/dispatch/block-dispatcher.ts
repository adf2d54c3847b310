/**
 * The dispatch primitive the scheduler calls: given a block attempt on a granted gang (a
 * BlockJob with its cards and epoch), enqueue its host job and observe how it ends.
 *
 * - The host job has the deterministic id `<experiment>.b<block>-a<attempt>-<host>` (keys.ts),
 *   a grant over its queue, name, id, options and payload with a nonce of one use (jobs/grant.ts),
 *   one BullMQ attempt (a retry is a new attempt with a new epoch, decided by the caller), and is
 *   kept after it ends so a new leader can read the outcome.
 * - `waitEnd` resolves `completed` (the worker committed the block; outcome has measured/not_run),
 *   `failed` (failedReason as the worker wrote it; `unrecoverable` when it threw
 *   UnrecoverableError: the same payload would fail again), or `lost`: the job has not ended and
 *   its host's alive key has been gone for `lostGraceMs` (the worker died; its leases expire
 *   with the same TTL as its alive key). A live worker always ends its job itself, a lost lease
 *   included (LEASE_LOST). A failed or lost attempt is
 *   re-dispatched by the caller as attempt + 1, on new leases.
 * - `waitEnd` wakes on the host queue's own events (BullMQ's `completed`/`failed` of the job in
 *   each host queue's events stream; every host's stream read (through store/event-log.ts) by one blocking XREAD on a
 *   connection of its own, followed from before the first job is added to it). Only a dead host
 *   has no event; that, and any event missed while the reader (re)connected, is what the slow
 *   safety poll (`pollMs`) is for.
 * - `close()` is final: a dispatch after it is refused, and a wait still in flight ends on the
 *   safety poll alone. No reader starts after it: a reader's connection opened then was never
 *   closed, and its reconnect timer outlived the Redis it followed and kept the process alive.
 */
import { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { BlockJob } from '../../jobs/block-job.ts';
import { signJob } from '../../jobs/grant.ts';
import { requireClusterSecret } from '../../store/cluster-secret.ts';
import { lastStreamId, readStreams } from '../../store/event-log.ts';
import { DEFAULT_PREFIX, hostJobId, hostQueue, type OrchKeys, orchKeys } from '../../store/keys.ts';
import { LeaseStore } from '../../store/lease-store.ts';

export interface DispatchOptions {
  prefix?: string;
  /** how often waitEnd re-reads the job state and the host's alive key without an event */
  pollMs?: number;
  /** how long the host may be dead (no alive key) while the job has not ended before it counts as lost */
  lostGraceMs?: number;
  /** the cluster secret that signs each host job (jobs/grant.ts); default: store/cluster-secret.ts from the environment */
  secret?: Buffer;
}

/** How long one read of the events streams blocks: a bound, not a delay (an event ends it at once). */
const READ_BLOCK_MS = 5000;

export type AttemptRef = Pick<BlockJob, 'experiment' | 'block' | 'attempt' | 'host' | 'cards' | 'epoch'>;

export type AttemptEnd =
  | { state: 'completed'; jobId: string; outcome: unknown }
  | { state: 'failed'; jobId: string; reason: string; unrecoverable: boolean }
  | { state: 'lost'; jobId: string; reason: string };

export class BlockDispatcher {
  private readonly queues = new Map<string, Queue>();
  /** each followed host's events stream and the last id read of it */
  private readonly streams = new Map<string, { key: string; id: string; live: boolean; ready: Promise<void> }>();
  /**
   * Jobs this dispatcher added, after their host's stream was followed: their end cannot be
   * missed by the reader, so their first wait reads nothing back (a lookup of a job just added).
   */
  private readonly added = new Set<string>();
  private reader: { connection: Redis; done: Promise<void> } | null = null;
  /** the reader connection's CLIENT ID, to end its blocking read when a host is added */
  private readerId: number | null = null;
  private closing = false;
  /** job id → what to wake when its completed/failed event arrives */
  private readonly onEnded = new Map<string, Set<() => void>>();
  /**
   * The completed events of jobs someone waits for, with their return value: the event is
   * BullMQ's own record of the completion (written by the worker's move to completed), so the
   * waiter takes it from there instead of reading the job's state and hash back (two round
   * trips and the whole payload per block). A failure is read back: its stack says whether it
   * was unrecoverable.
   */
  private readonly completed = new Map<string, unknown>();
  private readonly prefix: string;
  private readonly leases: LeaseStore;
  private readonly pollMs: number;
  private readonly lostGraceMs: number;
  private readonly keys: OrchKeys;
  private secret: Buffer | undefined;

  constructor(
    private readonly connection: Redis,
    opts: DispatchOptions = {},
  ) {
    this.prefix = opts.prefix ?? DEFAULT_PREFIX;
    this.leases = new LeaseStore(connection, { prefix: this.prefix });
    this.keys = orchKeys(this.prefix);
    this.pollMs = opts.pollMs ?? 500;
    this.lostGraceMs = opts.lostGraceMs ?? 5000;
    this.secret = opts.secret;
  }

  queue(host: string): Queue {
    let q = this.queues.get(host);
    if (!q) {
      q = new Queue(hostQueue(host), { connection: this.connection, prefix: this.prefix });
      this.queues.set(host, q);
    }
    return q;
  }

  /**
   * Follows the host queue's events stream from now on (its last id read here, so no end of a job
   * dispatched after this resolves is missed). One reader for every host: one blocking XREAD over
   * all their streams, on a connection of its own. A reader per host (BullMQ QueueEvents) re-read
   * each host's stream after every event on 64 connections and cost a fifth of the scheduler's
   * CPU at scale; one read across them takes every host's events that came meanwhile at once.
   */
  private async followHost(host: string): Promise<void> {
    const known = this.streams.get(host);
    if (known) return known.ready;
    const key = this.queue(host).keys.events as string;
    const follow = { key, id: '0-0', live: false, ready: Promise.resolve() };
    // read from the stream's last entry now (the whole stream when that read fails); in the reads
    // only from then on
    follow.ready = lastStreamId(this.connection, key).then(
      (last) => {
        follow.id = last;
        follow.live = true;
      },
      () => {
        follow.live = true;
      },
    );
    this.streams.set(host, follow);
    await follow.ready;
    this.startReader();
    // a read in flight does not know this stream yet: end it, the next one reads them all
    if (this.readerId !== null) await this.connection.client('UNBLOCK', this.readerId).catch(() => undefined);
  }

  private startReader(): void {
    if (this.reader || this.closing) return;
    // not pipelined: its XREAD blocks, and a blocking command in an auto-pipeline holds every
    // command queued behind it
    const connection = this.connection.duplicate({ enableAutoPipelining: false });
    // its reconnect errors are the reader's: the safety poll covers the gap
    connection.on('error', () => undefined);
    const loop = async () => {
      while (!this.closing) {
        try {
          this.readerId ??= Number(await connection.client('ID'));
          const follows = [...this.streams.values()].filter((f) => f.live);
          if (follows.length === 0) {
            await new Promise((r) => setTimeout(r, 100));
            continue;
          }
          const got = await readStreams(connection, follows, { blockMs: READ_BLOCK_MS });
          for (const [key, entries] of got ?? []) {
            const follow = follows.find((f) => f.key === key);
            for (const [id, fields] of entries) {
              if (follow) follow.id = id;
              this.onEvent(fields);
            }
          }
        } catch {
          // a dropped connection (its id changes) or a closing reader: read again from the ids kept
          this.readerId = null;
          if (!this.closing) await new Promise((r) => setTimeout(r, 100));
        }
      }
    };
    // the loop owns its connection: whoever ends the loop, the connection ends with it
    this.reader = { connection, done: loop().finally(() => connection.disconnect()) };
  }

  private onEvent(fields: string[]): void {
    const get = (name: string) => {
      for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
      return undefined;
    };
    const event = get('event');
    if (event !== 'completed' && event !== 'failed') return;
    const jobId = get('jobId');
    if (jobId === undefined) return;
    // ended before its waiter began to wait: that wait reads it back at once
    const early = this.added.delete(jobId);
    if (!early && !this.onEnded.has(jobId)) return;
    if (event === 'completed') {
      const raw = get('returnvalue');
      let value: unknown = raw;
      try {
        value = raw === undefined ? undefined : JSON.parse(raw);
      } catch {
        // kept as written
      }
      this.completed.set(jobId, value);
    }
    for (const wake of this.onEnded.get(jobId) ?? []) wake();
  }

  static jobId(a: Pick<BlockJob, 'experiment' | 'block' | 'attempt' | 'host'>): string {
    return hostJobId(a.experiment, a.block, a.attempt, a.host);
  }

  /** Enqueues the host job (a no-op when one with its id exists: re-attaching). */
  async dispatch(job: BlockJob): Promise<string> {
    const id = BlockDispatcher.jobId(job);
    if (this.closing) throw new Error(`block dispatcher: job ${id} dispatched after close()`);
    // signed here, where the payload leaves the scheduler: a worker runs only granted payloads
    this.secret ??= requireClusterSecret('the scheduler');
    // its end is read from the host's events stream: followed from before the job exists
    await this.followHost(job.host);
    // the grant covers the name, id and options it is added with (jobs/grant.ts)
    const signed = signJob(hostQueue(job.host), 'block', id, job, this.secret);
    await this.queue(job.host).add(signed.name, signed.data, signed.opts);
    this.added.add(id);
    return id;
  }

  /** Resolves when the attempt has ended (see the file comment); `timeoutMs` bounds the wait. */
  async waitEnd(a: AttemptRef, opts: { timeoutMs?: number } = {}): Promise<AttemptEnd> {
    const jobId = BlockDispatcher.jobId(a);
    const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
    await this.followHost(a.host);
    let signalled = false;
    let wake: () => void = () => undefined;
    const onEnd = () => {
      signalled = true;
      wake();
    };
    this.onEnded.set(jobId, (this.onEnded.get(jobId) ?? new Set()).add(onEnd));
    try {
      let deadSince: number | null = null;
      // a job added here a moment ago: its end comes as an event (the safety poll reads it anyway)
      let first = this.added.delete(jobId);
      for (;;) {
        signalled = false;
        if (this.completed.has(jobId)) return { state: 'completed', jobId, outcome: this.completed.get(jobId) };
        if (first) {
          first = false;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, Math.min(this.pollMs, Math.max(1, deadline - Date.now())));
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = () => undefined;
          continue;
        }
        // A live worker ends its job itself, also when the lease is lost (its renew or the
        // revocation message fails the block at once). Only a dead host leaves a job unended.
        const [end, exists] = await Promise.all([
          this.ended(a.host, jobId),
          this.connection.exists(this.keys.hostAlive(a.host)),
        ]);
        if (end) return end;
        const alive = exists === 1;
        if (alive) deadSince = null;
        else if (deadSince === null) deadSince = Date.now();
        else if (Date.now() - deadSince >= this.lostGraceMs) return this.lost(a, jobId);
        if (Date.now() > deadline)
          throw new Error(
            `block ${a.block} attempt ${a.attempt} (job ${jobId}) did not end within ${opts.timeoutMs} ms`,
          );
        if (signalled) continue;
        const waitMs = Math.min(
          deadSince === null ? this.pollMs : Math.min(this.pollMs, this.lostGraceMs),
          Math.max(1, deadline - Date.now()),
        );
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, waitMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = () => undefined;
      }
    } finally {
      const wakers = this.onEnded.get(jobId);
      wakers?.delete(onEnd);
      if (wakers?.size === 0) {
        this.onEnded.delete(jobId);
        this.completed.delete(jobId);
      }
    }
  }

  private async lost(a: AttemptRef, jobId: string): Promise<AttemptEnd> {
    const again = await this.ended(a.host, jobId);
    if (again) return again;
    await this.queue(a.host)
      .getJob(jobId)
      .then((j) => j?.remove())
      .catch(() => {
        // still locked by the dead worker's BullMQ lock: it fails on the lease when picked up again
      });
    const held = await this.leases.held(a.cards);
    const still = held.filter((l) => l.epoch === a.epoch).map((l) => l.card);
    return {
      state: 'lost',
      jobId,
      reason: `block ${a.block} attempt ${a.attempt}: host ${a.host} stopped heartbeating and its job never ended${still.length > 0 ? ` (leases on ${still.join(', ')} still expiring)` : ''}`,
    };
  }

  private async ended(host: string, jobId: string): Promise<AttemptEnd | null> {
    const q = this.queue(host);
    const state = await q.getJobState(jobId);
    if (state !== 'completed' && state !== 'failed') return null;
    // read after the state: the job hash then holds its return value or failure
    const job = await Job.fromId(q, jobId);
    if (!job) return null;
    if (state === 'completed') return { state: 'completed', jobId, outcome: job.returnvalue };
    if (state === 'failed') {
      const last = job.stacktrace?.[job.stacktrace.length - 1] ?? '';
      return {
        state: 'failed',
        jobId,
        reason: job.failedReason ?? 'failed',
        unrecoverable: last.startsWith('UnrecoverableError'),
      };
    }
    return null;
  }

  async close(): Promise<void> {
    this.closing = true;
    this.completed.clear();
    this.added.clear();
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
    const reader = this.reader;
    this.reader = null;
    if (reader) {
      // the blocking XREAD ends with its connection (a Redis already gone never answers it)
      reader.connection.disconnect();
      await Promise.race([reader.done, new Promise((r) => setTimeout(r, 1000))]);
    }
    this.streams.clear();
  }
}
