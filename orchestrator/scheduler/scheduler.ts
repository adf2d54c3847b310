/**
 * The scheduler service (`orch serve`, and in-process in the embedded default): the composition
 * of its rooms, one job each.
 *
 * - leadership.ts: the leader's term (elected, deposed) and the BullMQ workers it runs.
 * - block-lifecycle.ts: a block job's processor (wait for a grant → attempt → observe → end),
 *   one per block; attempt-observer.ts follows an attempt, retry-decision.ts says what follows one.
 * - grant-loop.ts: granting cards to the waiting blocks (the pure grant-planner.ts decides).
 * - experiment-settling.ts: the experiment's parent job, once every block ended.
 *
 * A standby that is elected picks up the blocks the dead leader held: their BullMQ locks expire,
 * the stalled check hands them back, and each processor finds its block's state in Redis and
 * re-attaches to the in-flight host jobs by their deterministic ids instead of dispatching again.
 */
import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import { BlockDispatcher } from '../dispatch/block-dispatcher.ts';
import { CardRegistry } from '../../store/card-registry.ts';
import { connectRedis } from '../../store/connect.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { LeaseStore } from '../../store/lease-store.ts';
import { RedisInstance } from '../../store/redis-instance.ts';
import { ResultStore } from '../../store/result-store.ts';
import { BlockLifecycle } from './block-lifecycle.ts';
import { settleExperiment } from './experiment-settling.ts';
import { GrantLoop } from './grant-loop.ts';
import type { LeaderLease } from './leader-lease.ts';
import { Leadership } from './leadership.ts';
import { schedulerTuning, type SchedulerContext, type SchedulerOptions } from './scheduler-context.ts';

export type { SchedulerOptions } from './scheduler-context.ts';

export class Scheduler extends EventEmitter {
  private readonly redis: Redis;
  private readonly ctx: SchedulerContext;
  private readonly grants: GrantLoop;
  private readonly leadership: Leadership;
  /** the Redis's instance marker, checked on the safety tick */
  private readonly instance: RedisInstance;
  private instanceTimer: NodeJS.Timeout | null = null;
  /** experiments whose block or experiment job this process followed, for the data-lost report */
  private readonly known = new Set<string>();

  constructor(options: SchedulerOptions) {
    super();
    const { url, prefix, log } = options;
    const tuning = schedulerTuning(options);
    this.redis = connectRedis(url, { log, name: 'orch-scheduler' });
    this.ctx = {
      redis: this.redis,
      prefix,
      log,
      tuning,
      store: new ExperimentStore(this.redis, prefix),
      registry: new CardRegistry(this.redis, { prefix }),
      leases: new LeaseStore(this.redis, { prefix }),
      results: new ResultStore(this.redis, { prefix }),
      dispatcher: new BlockDispatcher(this.redis, { prefix, pollMs: tuning.safetyPollMs, lostGraceMs: tuning.lostAfterMs, secret: options.secret }),
    };
    this.instance = new RedisInstance(this.redis, prefix);
    this.grants = new GrantLoop(this.ctx);
    const blocks = new BlockLifecycle(this.ctx, this.grants);
    this.leadership = new Leadership(
      { url, prefix, log, redis: this.redis, tuning },
      {
        block: (job, term) => {
          this.known.add(job.data.experiment);
          return blocks.process(job, term);
        },
        experiment: async (job, term) => {
          this.known.add(job.data.experiment);
          const r = await settleExperiment(this.ctx, job, term);
          this.grants.forgetExperiment(job.data.experiment);
          this.known.delete(job.data.experiment);
          return r;
        },
        began: (term) => {
          this.grants.begin(term);
          this.emit('leading');
        },
        ended: (why) => {
          this.grants.end();
          this.emit('deposed', why);
        },
      },
    );
  }

  get lease(): LeaderLease {
    return this.leadership.lease;
  }

  get isLeader(): boolean {
    return this.leadership.isLeader;
  }

  start(): void {
    this.leadership.start();
    const tick = () => {
      this.checkInstance()
        .catch((err: unknown) => this.ctx.log.debug({ err }, 'scheduler: cannot check the Redis instance marker'))
        .finally(() => {
          if (this.instanceTimer) this.instanceTimer = setTimeout(tick, this.ctx.tuning.safetyPollMs);
        });
    };
    this.instanceTimer = setTimeout(tick, 0);
  }

  /**
   * The Redis lost its data (restarted without persistence, flushed): the experiments this
   * scheduler followed no longer exist there, nor do their jobs, block states and leases. Each
   * is reported failed once, with the reason (a waiting `orch submit` ends with REDIS_DATA_LOST
   * on its own); nothing is written for them — the stores refuse a missing experiment — and the
   * term starts afresh, so no processor keeps waiting on a world that is gone.
   */
  private async checkInstance(): Promise<void> {
    if (!(await this.instance.lostSinceLastCheck())) return;
    const lost = [...this.known];
    this.known.clear();
    const reason = 'Redis lost its data (restarted without persistence, or flushed): its plan, block states, leases and results are gone';
    for (const id of lost) {
      this.ctx.log.error({ experiment: id, code: 'REDIS_DATA_LOST' }, `experiment ${id} failed: it no longer exists: ${reason}; submit it again (and give Redis persistence: appendonly yes)`);
    }
    this.ctx.log.error({ experiments: lost.length }, `scheduler: ${reason}; starting a fresh term`);
    await this.leadership.restartTerm('Redis lost its data');
  }

  async stop(): Promise<void> {
    if (this.instanceTimer) clearTimeout(this.instanceTimer);
    this.instanceTimer = null;
    await this.leadership.stop();
    await this.ctx.dispatcher.close();
    this.redis.disconnect();
  }

  /** Runs a grant pass now (coalesced: one at a time). */
  kick(): void {
    this.grants.kick();
  }
}
