/**
 * The leader's term. One `orch serve` leads at a time (leader-lease.ts); only the leader drives
 * blocks (grant-loop.ts and block-lifecycle.ts). Elected: a term begins. Deposed (a renewal
 * failed) or stopped: the term ends, and every processor of that term stops acting — the next
 * leader reads the block states and re-attaches to the attempts in flight.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { LeaderLease } from './leader-lease.ts';
import type { SchedulerTuning, Term } from './scheduler-context.ts';

export interface TermHandlers {
  /** a term began */
  began: (term: Term) => void;
  /** a term ended: drop what only that term knew */
  ended: (why: string) => void;
}

export class Leadership {
  readonly lease: LeaderLease;
  private term: Term | null = null;
  private stopped = false;

  constructor(
    private readonly o: { prefix: string; log: Logger; redis: Redis; tuning: SchedulerTuning },
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
      (why) => this.stepDown(why),
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stepDown('stopping');
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
    this.stepDown(why);
  }

  private lead(): void {
    let end!: () => void;
    const ended = new Promise<void>((r) => (end = r));
    const term: Term = {
      aborted: false,
      ended,
      end: () => {
        term.aborted = true;
        end();
      },
    };
    this.term = term;
    this.o.log.info({ id: this.lease.id }, 'scheduler: elected leader');
    this.handlers.began(term);
  }

  private stepDown(why: string): void {
    const term = this.term;
    if (!term) return;
    this.term = null;
    term.end();
    if (this.stopped) this.o.log.info('scheduler: stopped');
    else this.o.log.warn({ why }, 'scheduler: not leading any more');
    this.handlers.ended(why);
  }
}
