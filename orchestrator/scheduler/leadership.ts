/**
 * The leader's term. One `orch serve` leads at a time (leader-lease.ts); only the leader runs the
 * BullMQ workers on `blocks` and `exp`. Elected: a term begins and the workers start. Deposed
 * (a renewal failed) or stopped: the term ends, the workers are closed with force, and
 * processors of that term never settle their jobs — the jobs stall and the next leader picks
 * them up and re-attaches to the attempts in flight.
 */
import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { connectRedis } from '../../store/connect.ts';
import { QUEUES } from '../../store/keys.ts';
import { LeaderLease } from './leader-lease.ts';
import type { BlockJobData, SchedulerTuning, Term } from './scheduler-context.ts';
import { settleWithin } from '../../jobs/settle-within.ts';

const WORKER_CLOSE_WAIT_MS = 5000;

export interface TermHandlers {
  block: (job: Job<BlockJobData>, term: Term) => Promise<unknown>;
  experiment: (job: Job<BlockJobData>, term: Term) => Promise<unknown>;
  /** a term began (the workers are starting) */
  began: (term: Term) => void;
  /** a term ended (the workers are closed): drop what only that term knew */
  ended: (why: string) => void;
}

export class Leadership {
  readonly lease: LeaderLease;
  private term: Term | null = null;
  private workers: Worker[] = [];
  private stopped = false;

  constructor(
    private readonly o: { url: string; prefix: string; log: Logger; redis: Redis; tuning: SchedulerTuning },
    private readonly handlers: TermHandlers,
  ) {
    this.lease = new LeaderLease(o.redis, { prefix: o.prefix, ttlMs: o.tuning.leaderTtlMs });
  }

  get isLeader(): boolean {
    return this.lease.isLeader;
  }

  /** The term in progress, or null while not leading. */
  get current(): Term | null {
    return this.term;
  }

  start(): void {
    this.o.log.info({ id: this.lease.id }, 'scheduler: campaigning for leadership');
    this.lease.start(
      () => this.lead(),
      (why) => void this.stepDown(why),
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.stepDown('stopping');
    await this.lease.stop();
  }

  /**
   * Ends the term in progress and campaigns again (the Redis lost its data: every job, block
   * state and lease the term followed is gone); the next election begins a fresh term that
   * reads everything again.
   */
  async restartTerm(why: string): Promise<void> {
    if (this.stopped) return;
    this.lease.forget();
    await this.stepDown(why);
  }

  private lead(): void {
    let end!: () => void;
    const ended = new Promise<void>((r) => (end = r));
    const term: Term = { aborted: false, ended, end: () => ((term.aborted = true), end()) };
    this.term = term;
    this.o.log.info({ id: this.lease.id }, 'scheduler: elected leader');
    const { lockMs } = this.o.tuning;
    // A block job lives as long as its block (minutes): its processor only waits and observes,
    // and the lock says "a live leader follows this block". lockMs (10 s by default) outlasts a
    // Redis pause or an event-loop stall of several seconds, so a live leader's blocks do not
    // stall; short enough that a dead leader's blocks come back within lockMs + stalledInterval.
    // When one stalls anyway, the re-delivery joins the live processor (block-lifecycle.ts) and
    // the attempt record is a compare-and-set, so it never runs a second processor or attempt.
    // Every leader failover stalls each block in flight once, hence more than BullMQ's default
    // of 1; a job stalled 100 times is failed, and the experiment settles it as such.
    const common = {
      prefix: this.o.prefix,
      lockDuration: lockMs,
      stalledInterval: Math.max(500, Math.floor(lockMs / 2)),
      maxStalledCount: 100,
    };
    this.workers = [
      new Worker<BlockJobData>(QUEUES.blocks, (job) => this.handlers.block(job, term), {
        ...common,
        connection: connectRedis(this.o.url, { log: this.o.log, name: 'orch-scheduler-blocks' }),
        concurrency: 10_000,
      }),
      new Worker<BlockJobData>(QUEUES.exp, (job) => this.handlers.experiment(job, term), {
        ...common,
        connection: connectRedis(this.o.url, { log: this.o.log, name: 'orch-scheduler-exp' }),
        concurrency: 100,
      }),
    ];
    for (const w of this.workers) w.on('error', (err) => this.o.log.error({ err }, 'scheduler: queue worker error'));
    this.handlers.began(term);
  }

  private async stepDown(why: string): Promise<void> {
    const term = this.term;
    if (!term) return;
    this.term = null;
    term.end();
    if (this.stopped) this.o.log.info('scheduler: stopped');
    else this.o.log.warn({ why }, 'scheduler: not leading any more');
    const workers = this.workers;
    this.workers = [];
    await Promise.all(
      workers.map(async (w) => {
        // a forced close still waits on the worker's connection: bounded, then cut, so a stop
        // against a Redis that is gone ends (the block jobs' locks lapse and a new leader re-attaches)
        await settleWithin(w.close(true), WORKER_CLOSE_WAIT_MS);
        (w.opts.connection as Redis).disconnect?.();
      }),
    );
    this.handlers.ended(why);
  }
}
