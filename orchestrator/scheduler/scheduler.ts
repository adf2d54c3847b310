/**
 * The scheduler service (`orch serve`, and in-process in the embedded default): the composition
 * of its rooms, one job each.
 *
 * - leadership.ts: the leader's term (elected, deposed).
 * - grant-loop.ts: reads the head of the queue (queue-window.ts), starts a processor for every
 *   block not ended, grants cards to the waiting ones (the pure grant-planner.ts decides), and
 *   settles an experiment whose blocks all ended (experiment-settling.ts).
 * - block-lifecycle.ts: a block's processor (wait for a grant → attempt → observe → end);
 *   attempt-observer.ts follows an attempt, retry-decision.ts says what follows one.
 * - build-phase.ts: an experiment's builds, made on each host before its blocks may get cards there.
 * - submit-admission.ts: an experiment is acted on only when its submitter signed it with the
 *   submit token; the grant pass ends a refused one before any build or grant.
 *
 * A standby that is elected picks up where the dead leader stopped: its first pass reads every
 * active experiment's block states, and each running block's processor re-attaches to the
 * in-flight host jobs by their deterministic ids instead of dispatching again.
 */
import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import { CardRegistry } from '../../store/card-registry.ts';
import { connectRedis } from '../../store/connect.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { LeaseStore } from '../../store/lease-store.ts';
import { RedisInstance } from '../../store/redis-instance.ts';
import { ResultStore } from '../../store/result-store.ts';
import { followWakes } from '../../store/scheduler-wake.ts';
import { defineAllScripts } from '../../store/scripts.ts';
import { requireSubmitToken } from '../../store/submit-token.ts';
import { BlockDispatcher } from '../dispatch/block-dispatcher.ts';
import { BlockLifecycle } from './block-lifecycle.ts';
import { BuildPhase } from './build-phase.ts';
import { settleExperiment } from './experiment-settling.ts';
import { FailureBackoff } from './failure-backoff.ts';
import { GrantLoop } from './grant-loop.ts';
import type { LeaderLease } from './leader-lease.ts';
import { Leadership } from './leadership.ts';
import { type SchedulerContext, type SchedulerOptions, schedulerTuning } from './scheduler-context.ts';
import { SubmitAdmission } from './submit-admission.ts';

export type { SchedulerOptions } from './scheduler-context.ts';

export class Scheduler extends EventEmitter {
  private readonly redis: Redis;
  private readonly ctx: SchedulerContext;
  private readonly grants: GrantLoop;
  private readonly builds: BuildPhase;
  private readonly blocks: BlockLifecycle;
  private readonly leadership: Leadership;
  /** the Redis's instance marker, checked on the safety tick */
  private readonly instance: RedisInstance;
  private instanceTimer: NodeJS.Timeout | null = null;
  private wakes: { close: () => void } | null = null;
  /** experiments whose blocks this process drove, for the data-lost report */
  private readonly known = new Set<string>();

  constructor(options: SchedulerOptions) {
    super();
    const { url, prefix, log } = options;
    const tuning = schedulerTuning(options);
    // Every block's processor, the grant pass and the dispatcher share this connection: at scale
    // hundreds of their commands are issued in one tick, and one socket write each was a tenth
    // of the scheduler's CPU.
    this.redis = connectRedis(url, { log, name: 'orch-scheduler', autoPipelining: true });
    defineAllScripts(this.redis);
    const admission = new SubmitAdmission(options.submitToken ?? requireSubmitToken('the scheduler'));
    this.ctx = {
      redis: this.redis,
      prefix,
      log,
      tuning,
      store: new ExperimentStore(this.redis, prefix),
      registry: new CardRegistry(this.redis, { prefix }),
      leases: new LeaseStore(this.redis, { prefix }),
      results: new ResultStore(this.redis, { prefix }),
      dispatcher: new BlockDispatcher(this.redis, {
        prefix,
        pollMs: tuning.safetyPollMs,
        lostGraceMs: tuning.lostAfterMs,
        secret: options.secret,
      }),
      backoff: new FailureBackoff(log),
      refusal: (exp) => admission.refusal(exp),
    };
    this.instance = new RedisInstance(this.redis, prefix);
    // the rooms call each other only once a term began, after every one of them is built here
    this.grants = new GrantLoop(this.ctx, {
      gate: (exp) => this.builds.gate(exp),
      drive: (experiment, st, term) => {
        this.known.add(experiment);
        this.blocks.drive(experiment, st, term);
      },
      settle: async (experiment, term) => {
        await settleExperiment(this.ctx, experiment, term);
        this.grants.forgetExperiment(experiment);
        this.known.delete(experiment);
      },
    });
    this.builds = new BuildPhase(this.ctx, () => this.grants.kick(), options.secret);
    this.blocks = new BlockLifecycle(this.ctx, this.grants);
    this.leadership = new Leadership(
      { prefix, log, redis: this.redis, tuning },
      {
        began: (term) => {
          this.grants.begin(term);
          this.builds.begin(term);
          this.emit('leading');
        },
        ended: (why) => {
          this.grants.end();
          this.builds.end();
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
    // a submission or a cancel: the pass now, not at its next safety tick
    this.wakes = followWakes(this.redis, this.ctx.prefix, () => this.grants.kick());
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
    const reason =
      'Redis lost its data (restarted without persistence, or flushed): its plan, block states, leases and results are gone';
    for (const id of lost) {
      this.ctx.log.error(
        { experiment: id, code: 'REDIS_DATA_LOST' },
        `experiment ${id} failed: it no longer exists: ${reason}; submit it again (and give Redis persistence: appendonly yes)`,
      );
    }
    this.ctx.log.error({ experiments: lost.length }, `scheduler: ${reason}; starting a fresh term`);
    await this.leadership.restartTerm('Redis lost its data');
  }

  async stop(): Promise<void> {
    if (this.instanceTimer) clearTimeout(this.instanceTimer);
    this.instanceTimer = null;
    this.wakes?.close();
    this.wakes = null;
    await this.leadership.stop();
    await this.builds.close();
    await this.ctx.dispatcher.close();
    this.redis.disconnect();
  }

  /** Runs a grant pass now (coalesced: one at a time). */
  kick(): void {
    this.grants.kick();
  }
}
