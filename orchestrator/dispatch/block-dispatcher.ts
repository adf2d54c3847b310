/**
 * The dispatch primitive the scheduler calls: given a block attempt on a granted gang (a
 * BlockJob with its cards and epoch), enqueue its host job and observe how it ends.
 *
 * - The host job has the deterministic id `<experiment>.b<block>-a<attempt>-<host>` (keys.ts),
 *   one BullMQ attempt (a retry is a new attempt with a new epoch, decided by the caller), and is
 *   kept after it ends so a new leader can read the outcome.
 * - `waitEnd` resolves `completed` (the worker committed the block; outcome has measured/not_run),
 *   `failed` (failedReason as the worker wrote it; `unrecoverable` when it threw
 *   UnrecoverableError: the same payload would fail again), or `lost`: the job has not ended and
 *   its host's alive key has been gone for `lostGraceMs` (the worker died; its leases expire
 *   with the same TTL as its alive key). A live worker always ends its job itself, a lost lease
 *   included (LEASE_LOST). A failed or lost attempt is
 *   re-dispatched by the caller as attempt + 1, on new leases.
 * - `waitEnd` wakes on the host queue's own events (BullMQ QueueEvents `completed`/`failed` of
 *   the job, one events reader per host queue on a connection of its own: XREAD blocks). Only a
 *   dead host has no event; that, and any event missed while the reader (re)connected, is what
 *   the slow safety poll (`pollMs`) is for.
 */
import { Job, Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import type { BlockJob } from '../../jobs/block-job.ts';
import { signPayload } from '../../jobs/grant.ts';
import { requireClusterSecret } from '../../store/cluster-secret.ts';
import { DEFAULT_PREFIX, hostJobId, hostQueue, orchKeys, type OrchKeys } from '../../store/keys.ts';
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

export type AttemptRef = Pick<BlockJob, 'experiment' | 'block' | 'attempt' | 'host' | 'cards' | 'epoch'>;

export type AttemptEnd =
  | { state: 'completed'; jobId: string; outcome: unknown }
  | { state: 'failed'; jobId: string; reason: string; unrecoverable: boolean }
  | { state: 'lost'; jobId: string; reason: string };

export class BlockDispatcher {
  private readonly queues = new Map<string, Queue>();
  private readonly events = new Map<string, { events: QueueEvents; connection: Redis }>();
  /** job id → what to wake when its completed/failed event arrives */
  private readonly onEnded = new Map<string, Set<() => void>>();
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

  /** Starts the host queue's events reader on first use. */
  private followHost(host: string): void {
    if (this.events.has(host)) return;
    const connection = this.connection.duplicate();
    // its reconnect errors are the events reader's: the safety poll covers the gap
    connection.on('error', () => undefined);
    const events = new QueueEvents(hostQueue(host), { connection, prefix: this.prefix });
    const ended = ({ jobId }: { jobId: string }) => this.onEnded.get(jobId)?.forEach((wake) => wake());
    events.on('completed', ended);
    events.on('failed', ended);
    // A broken events stream only delays an end until the safety poll reads it.
    events.on('error', () => undefined);
    this.events.set(host, { events, connection });
  }

  static jobId(a: Pick<BlockJob, 'experiment' | 'block' | 'attempt' | 'host'>): string {
    return hostJobId(a.experiment, a.block, a.attempt, a.host);
  }

  /** Enqueues the host job (a no-op when one with its id exists: re-attaching). */
  async dispatch(job: BlockJob): Promise<string> {
    const id = BlockDispatcher.jobId(job);
    // signed here, where the payload leaves the scheduler: a worker runs only granted payloads
    this.secret ??= requireClusterSecret('the scheduler');
    await this.queue(job.host).add('block', signPayload(job, this.secret), { jobId: id, attempts: 1, removeOnComplete: false, removeOnFail: false });
    return id;
  }

  /** Resolves when the attempt has ended (see the file comment); `timeoutMs` bounds the wait. */
  async waitEnd(a: AttemptRef, opts: { timeoutMs?: number } = {}): Promise<AttemptEnd> {
    const jobId = BlockDispatcher.jobId(a);
    const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
    this.followHost(a.host);
    let signalled = false;
    let wake: () => void = () => undefined;
    const onEnd = () => {
      signalled = true;
      wake();
    };
    this.onEnded.set(jobId, (this.onEnded.get(jobId) ?? new Set()).add(onEnd));
    try {
      let deadSince: number | null = null;
      for (;;) {
        signalled = false;
        const end = await this.ended(a.host, jobId);
        if (end) return end;
        // A live worker ends its job itself, also when the lease is lost (its renew or the
        // revocation message fails the block at once). Only a dead host leaves a job unended.
        const alive = (await this.connection.exists(this.keys.hostAlive(a.host))) === 1;
        if (alive) deadSince = null;
        else if (deadSince === null) deadSince = Date.now();
        else if (Date.now() - deadSince >= this.lostGraceMs) return this.lost(a, jobId);
        if (Date.now() > deadline) throw new Error(`block ${a.block} attempt ${a.attempt} (job ${jobId}) did not end within ${opts.timeoutMs} ms`);
        if (signalled) continue;
        const waitMs = Math.min(deadSince === null ? this.pollMs : Math.min(this.pollMs, this.lostGraceMs), Math.max(1, deadline - Date.now()));
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, waitMs);
          wake = () => (clearTimeout(timer), resolve());
        });
        wake = () => undefined;
      }
    } finally {
      const wakers = this.onEnded.get(jobId);
      wakers?.delete(onEnd);
      if (wakers?.size === 0) this.onEnded.delete(jobId);
    }
  }

  private async lost(a: AttemptRef, jobId: string): Promise<AttemptEnd> {
    const again = await this.ended(a.host, jobId);
    if (again) return again;
    await this.queue(a.host).getJob(jobId).then((j) => j?.remove()).catch(() => {
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
      return { state: 'failed', jobId, reason: job.failedReason ?? 'failed', unrecoverable: last.startsWith('UnrecoverableError') };
    }
    return null;
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
    await Promise.all(
      // Done when the reader closed or its connection ended, whichever first: the reader's
      // close waits on its blocking XREAD, which a Redis already gone never answers.
      [...this.events.values()].map(async (e) => {
        const closing = e.events.close().catch(() => undefined);
        // only a live connection emits 'end' on disconnect; one reconnecting to a Redis gone has nothing to wait for
        const ended = new Promise<void>((r) => (e.connection.status === 'ready' ? e.connection.once('end', () => r()) : r()));
        e.connection.disconnect();
        await Promise.race([closing, ended]);
      }),
    );
    this.events.clear();
  }
}
