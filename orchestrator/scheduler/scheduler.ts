/**
 * The scheduler service (`orch serve`, and in-process in the embedded default).
 *
 * One leader at a time (leader-lease.ts). Only the leader runs BullMQ workers on `blocks` and
 * `exp`; a standby campaigns and, once elected, picks up the blocks the dead leader held: their
 * BullMQ locks expire, the stalled check hands them back, and each processor finds its block's
 * state in Redis (BlockState) and re-attaches to the in-flight host jobs by their deterministic
 * ids instead of dispatching again.
 *
 * A block processor: wait for a grant (the grant pass, grant-planner.ts, FIFO + backfill) →
 * acquire the gang's leases (Lua, all or none, per host) → record the attempt → dispatch one
 * host job per host → observe until the attempt committed, failed, was cancelled, or was lost
 * (its worker died: lease gone while the job never ended) — lost attempts are re-dispatched as
 * attempt + 1. The parent job on `exp` runs when every block ended and settles the experiment.
 */
import { EventEmitter } from 'node:events';
import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { connectRedis } from '../../store/connect.ts';
import type { Logger } from 'pino';
import { BlockDispatcher, type AttemptEnd } from '../dispatch/block-dispatcher.ts';
import { CardRegistry } from '../../store/card-registry.ts';
import { LeaseStore } from '../../store/lease-store.ts';
import { QUEUES } from '../../store/keys.ts';
import { ResultStore } from '../../store/result-store.ts';
import {
  ExperimentStore,
  TERMINAL_BLOCK_PHASES,
  type BlockState,
  type ExperimentRecord,
  type GangPart,
} from '../../store/experiment-store.ts';
import { buildBlockJob, plannedReps } from './build-block-job.ts';
import { expectedBlockMs, workloadKey } from './expected-duration.ts';
import { readStepHistory, recordStepHistory } from '../../store/step-history.ts';
import { compareQueued, planGrants, type CardSlot, type WantedBackend } from './grant-planner.ts';
import { LeaderLease } from './leader-lease.ts';

export interface SchedulerOptions {
  url: string;
  prefix: string;
  log: Logger;
  leaderTtlMs?: number;
  /** TTL of a freshly granted gang lease, until the worker's renewals take over */
  grantTtlMs?: number;
  /** an attempt whose host stopped heartbeating while its job never ended is lost after this */
  lostAfterMs?: number;
  /** lost attempts re-dispatched at most this many times in all */
  maxAttempts?: number;
  pollMs?: number;
  /** BullMQ lock of the block jobs; a dead leader's blocks are re-delivered about 2× after it */
  lockMs?: number;
}

export interface BlockJobData {
  experiment: string;
  block: number;
}

type Outcome =
  | { kind: 'committed' }
  | { kind: 'cancelled'; reason: string }
  | { kind: 'lost'; reason: string }
  | { kind: 'failed'; reason: string };

interface Waiter {
  key: string;
  exp: ExperimentRecord;
  block: number;
  expectedMs: number;
  resolve: (r: { gang: Omit<GangPart, 'job'>[] } | { cancelled: string }) => void;
}

interface Term {
  aborted: boolean;
  /** resolves when the term ends (deposed or stopped) */
  ended: Promise<void>;
  end: () => void;
}

const never = new Promise<never>(() => undefined);

export class Scheduler extends EventEmitter {
  readonly lease: LeaderLease;
  private readonly redis: Redis;
  private readonly store: ExperimentStore;
  private readonly registry: CardRegistry;
  private readonly leases: LeaseStore;
  private readonly results: ResultStore;
  private readonly dispatcher: BlockDispatcher;
  private readonly opts: Required<Omit<SchedulerOptions, 'log' | 'url' | 'prefix'>>;
  private readonly log: Logger;
  private workers: Worker[] = [];
  private term: Term | null = null;
  private readonly waiters = new Map<string, Waiter>();
  private readonly running = new Map<string, { cards: string[]; expectedEndMs: number }>();
  /** registered experiments (immutable but for their state, which is always read fresh) */
  private readonly experiments = new Map<string, ExperimentRecord>();
  private readonly lastWhy = new Map<string, string>();
  private granting: Promise<void> | null = null;
  private grantTimer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(private readonly options: SchedulerOptions) {
    super();
    this.redis = connectRedis(options.url, { log: options.log, name: 'orch-scheduler' });
    this.store = new ExperimentStore(this.redis, options.prefix);
    this.registry = new CardRegistry(this.redis, { prefix: options.prefix });
    this.leases = new LeaseStore(this.redis, { prefix: options.prefix });
    this.results = new ResultStore(this.redis, { prefix: options.prefix });
    this.log = options.log;
    this.opts = {
      leaderTtlMs: options.leaderTtlMs ?? 3000,
      grantTtlMs: options.grantTtlMs ?? 30_000,
      lostAfterMs: options.lostAfterMs ?? 2000,
      maxAttempts: options.maxAttempts ?? 3,
      pollMs: options.pollMs ?? 200,
      lockMs: options.lockMs ?? 3000,
    };
    this.dispatcher = new BlockDispatcher(this.redis, { prefix: options.prefix, pollMs: this.opts.pollMs, lostGraceMs: this.opts.lostAfterMs });
    this.lease = new LeaderLease(this.redis, { prefix: options.prefix, ttlMs: this.opts.leaderTtlMs });
  }

  get isLeader(): boolean {
    return this.lease.isLeader;
  }

  start(): void {
    this.log.info({ id: this.lease.id }, 'scheduler: campaigning for leadership');
    this.lease.start(
      () => this.lead(),
      (why) => void this.stepDown(why),
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.stepDown('stopping');
    await this.lease.stop();
    await this.dispatcher.close();
    this.redis.disconnect();
  }

  private lead(): void {
    let end!: () => void;
    const ended = new Promise<void>((r) => (end = r));
    const term: Term = { aborted: false, ended, end: () => ((term.aborted = true), end()) };
    this.term = term;
    this.log.info({ id: this.lease.id }, 'scheduler: elected leader');
    const common = {
      connection: connectRedis(this.options.url, { log: this.log, name: 'orch-scheduler-blocks' }),
      prefix: this.options.prefix,
      lockDuration: this.opts.lockMs,
      stalledInterval: Math.max(500, Math.floor(this.opts.lockMs / 2)),
      maxStalledCount: 1_000_000,
    };
    this.workers = [
      new Worker<BlockJobData>(QUEUES.blocks, (job) => this.processBlock(job, term), { ...common, concurrency: 10_000 }),
      new Worker<BlockJobData>(QUEUES.exp, (job) => this.processExperiment(job, term), {
        ...common,
        connection: connectRedis(this.options.url, { log: this.log, name: 'orch-scheduler-exp' }),
        concurrency: 100,
      }),
    ];
    for (const w of this.workers) w.on('error', (err) => this.log.error({ err }, 'scheduler: queue worker error'));
    const tick = () => {
      if (term.aborted) return;
      this.kick();
      this.grantTimer = setTimeout(tick, this.opts.pollMs);
    };
    tick();
    this.emit('leading');
  }

  private async stepDown(why: string): Promise<void> {
    const term = this.term;
    if (!term) return;
    this.term = null;
    term.end();
    if (this.grantTimer) clearTimeout(this.grantTimer);
    if (this.stopped) this.log.info('scheduler: stopped');
    else this.log.warn({ why }, 'scheduler: not leading any more');
    const workers = this.workers;
    this.workers = [];
    // force: in-flight processors never settle after the term ended; their jobs stall and the
    // next leader re-attaches to them.
    await Promise.all(
      workers.map(async (w) => {
        await w.close(true).catch(() => undefined);
        w.opts.connection && (w.opts.connection as Redis).disconnect?.();
      }),
    );
    this.waiters.clear();
    this.running.clear();
    this.experiments.clear();
    this.lastWhy.clear();
    this.emit('deposed', why);
  }

  /** Runs a grant pass now (coalesced: one at a time). */
  kick(): void {
    if (this.granting || !this.term || this.term.aborted) return;
    this.granting = this.grantPass()
      .catch((err) => this.log.error({ err }, 'scheduler: grant pass failed'))
      .finally(() => (this.granting = null));
  }

  // ---------------------------------------------------------------- block processor

  private async processBlock(job: Job<BlockJobData>, term: Term): Promise<unknown> {
    const { experiment, block } = job.data;
    const key = `${experiment}.b${block}`;
    const log = this.log.child({ experiment, block });
    const exp = await this.store.get(experiment);
    if (!exp) throw new Error(`experiment ${experiment} is not registered`);
    let st = (await this.store.block(experiment, block)) ?? null;
    if (!st) throw new Error(`experiment ${experiment} has no state for block ${block}`);
    if (TERMINAL_BLOCK_PHASES.has(st.phase)) return { phase: st.phase };

    for (;;) {
      if (term.aborted) return never;
      if (st.phase === 'running' && st.gang.length > 0) {
        log.info({ attempt: st.attempt }, 're-attaching to the attempt in flight');
      } else {
        const expectedMs = await this.expectedMs(exp);
        const got = await new Promise<{ gang: Omit<GangPart, 'job'>[] } | { cancelled: string }>((resolve) => {
          this.waiters.set(key, { key, exp, block, expectedMs, resolve });
          this.kick();
        });
        if (term.aborted) return never;
        if ('cancelled' in got) return this.endBlock(exp, st, 'cancelled', got.cancelled);
        const attempt: number = st.attempt + 1;
        st = {
          ...st,
          phase: 'running',
          attempt,
          gang: got.gang.map((p) => ({ ...p, job: BlockDispatcher.jobId({ experiment, block, attempt, host: p.host }) })),
          why: null,
          expected_ms: expectedMs,
          granted_at: Date.now(),
        };
        await this.store.setBlock(experiment, st);
        await this.store.advance(experiment, 'running');
        log.info({ attempt, gang: st.gang }, 'granted');
      }
      this.running.set(key, {
        cards: st.gang.flatMap((p) => p.cards),
        expectedEndMs: (st.granted_at ?? Date.now()) + (st.expected_ms ?? 0),
      });
      const outcome = await this.observe(exp, st, term);
      this.running.delete(key);
      this.kick();
      if (term.aborted) return never;
      st.attempts = [...st.attempts, { attempt: st.attempt, gang: st.gang, outcome: outcome.kind, ...('reason' in outcome ? { reason: outcome.reason } : {}) }];
      switch (outcome.kind) {
        case 'committed':
          await this.recordStepTimes(exp, block);
          return this.endBlock(exp, st, 'done', null);
        case 'cancelled':
          return this.endBlock(exp, st, 'cancelled', outcome.reason);
        case 'failed':
          return this.endBlock(exp, st, 'failed', outcome.reason);
        case 'lost':
          log.warn({ attempt: st.attempt, reason: outcome.reason }, 'attempt lost');
          if (st.attempt >= this.opts.maxAttempts) {
            return this.endBlock(exp, st, 'failed', `${outcome.reason}; gave up after ${st.attempt} attempts`);
          }
          st = { ...st, phase: 'waiting', gang: [], reason: outcome.reason };
          await this.store.setBlock(experiment, st);
      }
    }
  }

  /**
   * Follows the attempt until it ends: dispatches its host jobs (a no-op for those that exist:
   * re-attaching), waits for each (orchestrator/dispatch/), and meanwhile watches for a cancel.
   */
  private async observe(exp: ExperimentRecord, st: BlockState, term: Term): Promise<Outcome> {
    const refs = st.gang.map((p) => ({ experiment: exp.id, block: st.block, attempt: st.attempt, host: p.host, cards: p.cards, epoch: p.epoch }));
    const ends: (AttemptEnd | null)[] = refs.map(() => null);
    let settled: () => void = () => undefined;
    for (const [i, part] of st.gang.entries()) {
      const held = await this.heldUnder(part);
      const exists = await this.dispatcher.queue(part.host).getJob(part.job);
      if (!exists && !held) {
        ends[i] = { state: 'lost', jobId: part.job, reason: `attempt ${st.attempt}: its leases on ${part.cards.join(',')} ended before the host job was dispatched` };
        continue;
      }
      if (!exists) await this.dispatcher.dispatch(buildBlockJob(exp, st.block, st.attempt, part));
      void this.dispatcher.waitEnd(refs[i]!).then(
        (end) => ((ends[i] = end), settled()),
        (err: unknown) => ((ends[i] = { state: 'lost', jobId: part.job, reason: `cannot follow the host job: ${String(err)}` }), settled()),
      );
    }
    let cancelledAt: number | null = null;
    for (;;) {
      if (term.aborted) return { kind: 'lost', reason: 'scheduler deposed' };
      const state = await this.store.state(exp.id);
      if ((state === 'cancelling' || state === 'cancelled') && cancelledAt === null) {
        cancelledAt = Date.now();
        await this.revokeGang(st.gang, 'experiment cancelled');
      }
      const all = ends.every((e) => e !== null);
      if (cancelledAt !== null) {
        // Revoked ranks die at once and their worker fails the job; a dead worker never does.
        if (all || Date.now() - cancelledAt > 5000) {
          for (const p of st.gang) await this.dispatcher.queue(p.host).getJob(p.job).then((j) => j?.remove()).catch(() => undefined);
          if (await this.committed(exp.id, st)) return { kind: 'committed' };
          const why = (await this.store.get(exp.id))?.reason;
          return { kind: 'cancelled', reason: why ?? 'cancelled by orch cancel' };
        }
      } else {
        const bad = ends.find((e) => e !== null && e.state !== 'completed');
        if (bad) {
          // One failed part fails the gang: revoke the other hosts' parts (KillOnBadExit).
          await this.revokeGang(st.gang, `another part of block ${st.block} attempt ${st.attempt} ended ${bad.state}`);
          if (await this.committed(exp.id, st)) return { kind: 'committed' };
          if (bad.state === 'failed' && bad.unrecoverable) return { kind: 'failed', reason: bad.reason };
          return { kind: 'lost', reason: bad.reason };
        }
        if (all) {
          if (await this.committed(exp.id, st)) return { kind: 'committed' };
          return { kind: 'failed', reason: `attempt ${st.attempt} ended without committing its results` };
        }
      }
      await Promise.race([sleep(this.opts.pollMs), term.ended, new Promise<void>((r) => (settled = r))]);
    }
  }

  private async committed(id: string, st: BlockState): Promise<boolean> {
    const commit = await this.redis.hget(this.store.keys.commits(id), String(st.block));
    return commit !== null && (JSON.parse(commit) as { attempt: number }).attempt === st.attempt;
  }

  private async heldUnder(part: Omit<GangPart, 'job'>): Promise<boolean> {
    const held = await this.leases.held(part.cards);
    return held.length === part.cards.length && held.every((l) => l.epoch === part.epoch);
  }

  private async revokeGang(gang: Omit<GangPart, 'job'>[], reason: string): Promise<void> {
    for (const p of gang) await this.leases.revoke({ cards: p.cards, epoch: p.epoch, reason });
  }

  /** Ends a block: every planned rep that no attempt committed is recorded as not run. */
  private async endBlock(exp: ExperimentRecord, st: BlockState, phase: 'done' | 'failed' | 'cancelled', reason: string | null) {
    if (phase !== 'done') {
      const measured = new Set(await this.redis.hkeys(this.store.keys.results(exp.id)));
      const notRun = plannedReps(exp, st.block)
        .filter((r) => !measured.has(r.field))
        .map((r) => ({ block: r.block, arm: r.arm, rep: r.rep, reason: `not run: ${reason ?? phase}` }));
      await this.results.failReps(exp.id, st.block, st.attempt, notRun);
    }
    const final: BlockState = { ...st, phase, reason, why: null, ended_at: Date.now() };
    await this.store.setBlock(exp.id, final);
    this.log.info({ experiment: exp.id, block: st.block, phase, reason }, 'block ended');
    return { phase, reason };
  }

  private async recordStepTimes(exp: ExperimentRecord, block: number): Promise<void> {
    const all = await this.redis.hgetall(this.store.keys.results(exp.id));
    const steps = Object.entries(all)
      .filter(([k]) => k.startsWith(`${block}/`))
      .flatMap(([, v]) => (JSON.parse(v) as { step_ms?: number[] }).step_ms ?? []);
    await recordStepHistory(this.redis, this.options.prefix, workloadKey(exp.spec), steps);
  }

  // ---------------------------------------------------------------- grant pass

  /**
   * One pass of FIFO granting. The queue is every `waiting` block of every active experiment,
   * read from Redis — not only the blocks whose BullMQ job has reached a processor yet — so a
   * block delivered late never loses its place: a grant that falls to an undelivered block is
   * held back this pass (its cards stay free for it), never given to a younger block.
   */
  private async grantPass(): Promise<void> {
    const term = this.term;
    const ids = await this.store.active();
    const queue: { key: string; exp: ExperimentRecord; block: number; expectedMs: number }[] = [];
    for (const id of ids) {
      const state = await this.store.state(id);
      if (state === 'cancelling' || state === 'cancelled') {
        for (const w of this.waiters.values()) {
          if (w.exp.id !== id) continue;
          this.waiters.delete(w.key);
          w.resolve({ cancelled: 'cancelled while waiting for cards' });
        }
        continue;
      }
      if (state !== 'queued' && state !== 'running') continue;
      const exp = await this.experiment(id);
      if (!exp) continue;
      for (const b of await this.store.blocks(id)) {
        if (b.phase !== 'waiting') continue;
        const key = `${id}.b${b.block}`;
        queue.push({ key, exp, block: b.block, expectedMs: this.waiters.get(key)?.expectedMs ?? (await this.expectedMs(exp)) });
      }
    }
    if (queue.length === 0) return;
    queue.sort((a, b) => compareQueued({ ...a.exp, block: a.block }, { ...b.exp, block: b.block }));
    const cards = await this.registry.liveCards();
    const slots: CardSlot[] = cards.map((c) => ({ id: c.id, host: c.host, backend: c.backend, index: c.index }));
    const busy = new Set((await this.leases.held(cards.map((c) => c.id))).map((l) => l.card));
    const decision = planGrants({
      now: Date.now(),
      cards: slots,
      busy,
      running: [...this.running.entries()].map(([key, r]) => ({ key, ...r })),
      waiting: queue.map((q) => ({
        key: q.key,
        ranks: q.exp.plan.ranks,
        backend: wantedBackend(q.exp),
        placement: q.exp.plan.placement,
        expectedMs: q.expectedMs,
      })),
    });
    if (term !== this.term || !term || term.aborted) return;
    for (const g of decision.grants) {
      const w = this.waiters.get(g.key);
      if (!w) continue; // not delivered yet: its cards wait for it
      const gang = await this.acquire(w, g.cards);
      if (!gang) continue;
      this.waiters.delete(g.key);
      w.resolve({ gang });
    }
    const whyByKey = new Map(queue.map((q) => [q.key, q]));
    for (const [key, why] of decision.why) {
      const q = whyByKey.get(key)!;
      if (this.lastWhy.get(key) === why) continue;
      this.lastWhy.set(key, why);
      const st = await this.store.block(q.exp.id, q.block);
      if (st && st.phase === 'waiting') await this.store.setBlock(q.exp.id, { ...st, why });
    }
  }

  private async experiment(id: string): Promise<ExperimentRecord | null> {
    let exp = this.experiments.get(id);
    if (!exp) {
      const got = await this.store.get(id);
      if (!got) return null;
      exp = got;
      this.experiments.set(id, exp);
    }
    return exp;
  }

  private async expectedMs(exp: ExperimentRecord): Promise<number> {
    return expectedBlockMs(exp.plan, exp.spec, await readStepHistory(this.redis, this.options.prefix, workloadKey(exp.spec)));
  }

  /** Leases the granted cards, one all-or-none call per host; undoes a partial spread grant. */
  private async acquire(w: Waiter, slots: CardSlot[]): Promise<Omit<GangPart, 'job'>[] | null> {
    const byHost = new Map<string, string[]>();
    for (const s of slots) byHost.set(s.host, [...(byHost.get(s.host) ?? []), s.id]);
    const gang: Omit<GangPart, 'job'>[] = [];
    for (const [host, ids] of byHost) {
      const r = await this.leases.acquireGang({ cards: ids, owner: host, ttlMs: this.opts.grantTtlMs, experiment: w.exp.id, block: w.block });
      if (!r.granted) {
        this.log.info({ key: w.key, busy: r.busy }, 'grant raced with another lease; retrying next pass');
        await this.revokeGang(gang, 'partial grant undone');
        return null;
      }
      gang.push({ host, cards: ids, epoch: r.epoch });
    }
    return gang;
  }

  // ---------------------------------------------------------------- experiment parent

  private async processExperiment(job: Job<BlockJobData>, term: Term): Promise<unknown> {
    const { experiment } = job.data;
    const exp = await this.store.get(experiment);
    if (!exp) throw new Error(`experiment ${experiment} is not registered`);
    if (term.aborted) return never;
    const blocks = await this.store.blocks(experiment);
    // Every planned rep ends measured or recorded as not run, whatever happened to its block.
    const measured = new Set(await this.redis.hkeys(this.store.keys.results(experiment)));
    const failed = new Set(await this.redis.hkeys(this.store.keys.failed(experiment)));
    for (const b of exp.plan.blocks) {
      const st = blocks.find((s) => s.block === b.index);
      const missing = plannedReps(exp, b.index)
        .map((r) => r.field)
        .filter((f) => !measured.has(f) && !failed.has(f));
      if (missing.length > 0) {
        const reason = `not measured: block ${b.index} ended ${st?.phase ?? 'unknown'} without this rep`;
        await this.redis.hset(
          this.store.keys.failed(experiment),
          Object.fromEntries(missing.map((f) => [f, JSON.stringify({ reason, attempt: st?.attempt ?? 0 })])),
        );
      }
    }
    // A block whose job failed outside the processor (a bug, a lost Redis) never reached an end
    // state: it failed, whatever its record says.
    for (const b of blocks.filter((x) => !TERMINAL_BLOCK_PHASES.has(x.phase))) {
      b.phase = 'failed';
      b.reason = `the block job ended without an outcome (${b.why ?? b.reason ?? 'see the scheduler log'})`;
      b.ended_at = Date.now();
      await this.store.setBlock(experiment, b);
    }
    const state = await this.store.state(experiment);
    const bad = blocks.filter((b) => b.phase === 'failed');
    if (state === 'cancelling' || state === 'cancelled' || blocks.some((b) => b.phase === 'cancelled')) {
      await this.store.finish(experiment, 'cancelled', exp.reason ?? 'cancelled');
    } else if (bad.length > 0) {
      await this.store.finish(experiment, 'failed', bad.map((b) => `block ${b.block}: ${b.reason}`).join('; '));
    } else {
      await this.store.finish(experiment, 'done', null);
    }
    await this.store.deactivate(experiment);
    this.experiments.delete(experiment);
    this.log.info({ experiment, state: await this.store.state(experiment) }, 'experiment ended');
    return { blocks: blocks.map((b) => b.phase) };
  }
}

/** What a block of this experiment needs from a card's backend. */
export function wantedBackend(exp: Pick<ExperimentRecord, 'spec'>): WantedBackend {
  const w = exp.spec.workload;
  return w.runtime === 'native' ? w.backend : 'any';
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
