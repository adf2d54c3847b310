/**
 * A host's worker with the rank part replaced, for the scheduler at scale: it consumes the host's
 * queue like worker/worker.ts (the grant verified, the payload validated), renews the gang's
 * leases while the block "runs" (a sleep), then writes one result per planned rep and commits
 * through the real ResultStore.commitBlock (commit-block.lua, fenced by the epoch) and releases
 * the leases. So the scheduler's and the store's costs are the real ones; only graphrt is gone.
 */
import { Worker as BullWorker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { BlockJobSchema, sequenceReps } from '../../jobs/block-job.ts';
import type { Card } from '../../jobs/card.ts';
import { verifyJob } from '../../jobs/grant.ts';
import { repResultFields } from '../../jobs/rep-ref.ts';
import { leaseOwnerOf } from '../../jobs/spread-gang.ts';
import { CardRegistry } from '../../store/card-registry.ts';
import { hostQueue } from '../../store/keys.ts';
import { LeaseStore } from '../../store/lease-store.ts';
import { ResultStore } from '../../store/result-store.ts';

/** One host job as the stand-in saw it: what the exclusivity and utilisation checks read. */
export interface HostJobRecord {
  experiment: string;
  block: number;
  attempt: number;
  host: string;
  cards: string[];
  epoch: number;
  /** the processor started (Date.now()) */
  received: number;
  /** the grant checked and the first renew answered: the block "runs" from here (0: never) */
  started: number;
  /** the run (the sleep) ended: commit and release follow (0: never) */
  ran: number;
  /** the release began (Date.now()): the leases were held until at least then */
  releasing: number;
  /** the leases were released (Date.now()) */
  released: number;
  committed: boolean;
  error?: string;
}

export interface StandInOptions {
  host: string;
  cards: number;
  prefix: string;
  secret: Buffer;
  heartbeatMs: number;
  /** how long a block "runs": drawn by the caller (seeded) */
  runMs: () => number;
}

export class StandInHost {
  readonly records: HostJobRecord[] = [];
  private bull: BullWorker | null = null;
  private beat: NodeJS.Timeout | null = null;
  private readonly registry: CardRegistry;
  private readonly leases: LeaseStore;
  private readonly results: ResultStore;

  constructor(
    private readonly redis: Redis,
    private readonly o: StandInOptions,
  ) {
    this.registry = new CardRegistry(redis, { prefix: o.prefix });
    this.leases = new LeaseStore(redis, { prefix: o.prefix });
    this.results = new ResultStore(redis, { prefix: o.prefix });
  }

  get cards(): Card[] {
    return Array.from({ length: this.o.cards }, (_, i) => {
      const id = `cpu:${i}@${this.o.host}`;
      return { id, host: this.o.host, backend: 'cpu' as const, index: i, uuid: id, name: 'stand-in' };
    });
  }

  async start(): Promise<void> {
    const ttl = 2 * this.o.heartbeatMs;
    await this.registry.register(this.o.host, this.cards, { ttlMs: ttl, pid: process.pid });
    this.beat = setInterval(
      () => void this.registry.heartbeat(this.o.host, ttl).catch(() => undefined),
      this.o.heartbeatMs,
    );
    this.bull = new BullWorker(hostQueue(this.o.host), (job) => this.run(job), {
      connection: this.redis,
      prefix: this.o.prefix,
      concurrency: this.o.cards + 1,
      maxStalledCount: 0,
    });
    this.bull.on('error', () => undefined);
  }

  private async run(bull: Job): Promise<unknown> {
    const received = Date.now();
    const data: unknown = bull.data;
    const check = verifyJob(
      {
        queue: hostQueue(this.o.host),
        name: bull.name,
        id: bull.id,
        data,
        opts: bull.opts as Record<string, unknown>,
        repeatJobKey: bull.repeatJobKey,
      },
      this.o.secret,
    );
    if (!check.ok) throw new Error(`refused: ${check.why}`);
    const job = BlockJobSchema.parse(data);
    const rec: HostJobRecord = {
      experiment: job.experiment,
      block: job.block,
      attempt: job.attempt,
      host: this.o.host,
      cards: job.cards,
      epoch: job.epoch,
      received,
      started: 0,
      ran: 0,
      releasing: 0,
      released: 0,
      committed: false,
    };
    this.records.push(rec);
    const ttlMs = 2 * this.o.heartbeatMs;
    const owner = leaseOwnerOf({ ...job, host: this.o.host });
    let lost: string | null = null;
    const renew = async () => {
      const r = await this.leases.renew({ cards: job.cards, owner, epoch: job.epoch, ttlMs });
      if (!r.ok) lost ??= `lease of ${r.card} lost: ${r.reason}`;
    };
    try {
      await renew();
      rec.started = Date.now();
      const timer = setInterval(() => void renew().catch(() => undefined), this.o.heartbeatMs);
      try {
        await new Promise((r) => setTimeout(r, this.o.runMs()));
      } finally {
        clearInterval(timer);
      }
      rec.ran = Date.now();
      if (lost) throw new Error(lost);
      const reps = sequenceReps(job.sequence).map((p) => ({
        block: job.block,
        arm: p.arm,
        rep: p.rep,
        result: {
          ...repResultFields(job, p),
          step_ms: Array.from({ length: job.steps }, (_, i) => 0.5 + 0.01 * i),
          backend: 'cpu',
          mode: 'eager' as const,
          host: this.o.host,
          cards: job.cards,
        },
      }));
      const res = await this.results.commitBlock({
        experiment: job.experiment,
        block: job.block,
        attempt: job.attempt,
        epoch: job.epoch,
        host: this.o.host,
        cards: job.cards,
        reps,
        notRun: [],
        gates: [],
      });
      if (!res.committed) throw new Error(`commit refused: ${JSON.stringify(res)}`);
      rec.committed = true;
      return {
        experiment: job.experiment,
        block: job.block,
        attempt: job.attempt,
        epoch: job.epoch,
        measured: reps.length,
        not_run: 0,
        gates: [],
      };
    } catch (err) {
      rec.error = (err as Error).message;
      throw err;
    } finally {
      rec.releasing = Date.now();
      await this.leases.release({ cards: job.cards, epoch: job.epoch }).catch(() => undefined);
      rec.released = Date.now();
    }
  }

  async stop(): Promise<void> {
    if (this.beat) clearInterval(this.beat);
    await this.bull?.close(true).catch(() => undefined);
  }
}
