/**
 * `/metrics` in Prometheus' text format (prom-client, a registry of its own). Every label takes
 * its values from a fixed set (a state, an outcome, a reason code: wait-reason-code.ts) or from
 * the cluster's own hosts and cards, never an experiment id or a sentence, so the series stay
 * as many as the fleet has cards. Read at each scrape from the stores: cards by state and each
 * card's liveness and holder, each host's worker heartbeat, card busy ratio per host,
 * experiments by state, waiting blocks by reason code, block attempts by outcome, the build
 * locks' waits, Redis memory; and from the experiments' event streams, tailed from where the
 * last scrape stopped: reps, their measured time, gate failures; experiments that ended, by
 * outcome (experiment-outcome.ts); and from the nightly history, when each suite last
 * succeeded. Counters start at what the stores held when the dashboard started. An ended
 * experiment is read once, then only counted.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { messageOf } from '../../jobs/message-of.ts';
import { isOneOf } from '../../jobs/one-of.ts';
import { readBuildState } from '../../store/build-state.ts';
import {
  EXPERIMENT_STATES,
  type ExperimentRecord,
  ExperimentStore,
  TERMINAL_EXPERIMENT_STATES,
} from '../../store/experiment-store.ts';
import { clusterStatus } from '../experiment/cluster-status.ts';
import { experimentOutcomes } from '../experiment/experiment-outcome.ts';
import { OUTCOMES } from '../experiment/outcome-codes.ts';
import { readEvents } from '../results/collect-results.ts';
import { type DashboardContext, fromRedis } from './dashboard-context.ts';
import { dashboardHistory } from './dashboard-history.ts';
import { WAIT_REASONS, waitReasonCode } from './wait-reason-code.ts';

/** A block attempt's outcome as block-lifecycle.ts records it; anything else is counted as other. */
export const ATTEMPT_OUTCOMES = ['committed', 'cancelled', 'failed', 'lost', 'other'] as const;
export const CARD_STATES = ['free', 'held', 'dead'] as const;
/** Ended experiments read (outcome, last stream entries) per scrape at most: the first scrape of a long history is spread over several. */
const SETTLE_PER_SCRAPE = 50;

interface StreamLine {
  type?: string;
  step_ms?: number[];
  pass?: boolean;
}

export class DashboardMetrics {
  readonly registry = new Registry();
  private readonly streamAt = new Map<string, string>();
  /** last totals of what the stores hold, so counters move by the difference */
  private readonly seen = new Map<string, number>();
  /** ended experiments already counted: their blocks and outcome no longer change */
  private readonly settled = new Set<string>();
  /** attempts by outcome and retries of the settled experiments */
  private readonly settledAttempts = new Map<string, number>();
  private readonly cards;
  private readonly waiting;
  private readonly attempts;
  private readonly retried;
  private readonly buildWaiters;
  private readonly buildWait;
  private readonly busy;
  private readonly cardUp;
  private readonly cardHeld;
  private readonly workerUp;
  private readonly workerCards;
  private readonly experiments;
  private readonly ended;
  private readonly reps;
  private readonly repSeconds;
  private readonly gateFailures;
  private readonly nightlySuccess;
  private readonly history;
  private readonly redisUp;
  private readonly redisMemory;

  constructor(private readonly ctx: DashboardContext) {
    const registers = [this.registry];
    this.history = dashboardHistory(ctx);
    this.cards = new Gauge({
      name: 'orch_cards',
      help: 'Registered cards by state (free, held, dead: host missed its heartbeat)',
      labelNames: ['state'],
      registers,
    });
    this.waiting = new Gauge({
      name: 'orch_blocks_waiting',
      help: "Blocks waiting for a gang, by the scheduler's reason",
      labelNames: ['reason'],
      registers,
    });
    this.attempts = new Counter({
      name: 'orch_block_attempts_total',
      help: 'Block attempts that ended, by outcome (lost: its gang was lost; failed; retried ones count as lost)',
      labelNames: ['outcome'],
      registers,
    });
    this.retried = new Counter({
      name: 'orch_blocks_retried_total',
      help: 'Block attempts started again after a lost one (attempt > 1)',
      registers,
    });
    this.buildWaiters = new Gauge({
      name: 'orch_build_lock_waiters',
      help: 'Requests waiting for the build lock, per host',
      labelNames: ['host'],
      registers,
    });
    this.buildWait = new Gauge({
      name: 'orch_build_lock_wait_seconds',
      help: 'Longest current wait for the build lock, per host',
      labelNames: ['host'],
      registers,
    });
    this.busy = new Gauge({
      name: 'orch_card_busy_ratio',
      help: "Ratio of a host's live cards held by a gang (0..1)",
      labelNames: ['host'],
      registers,
    });
    this.cardUp = new Gauge({
      name: 'orch_card_up',
      help: "1 while the card's host heartbeats, else 0",
      labelNames: ['host', 'card', 'backend'],
      registers,
    });
    this.cardHeld = new Gauge({
      name: 'orch_card_held',
      help: "1 while a gang holds the card's lease, else 0",
      labelNames: ['host', 'card', 'backend'],
      registers,
    });
    this.workerUp = new Gauge({
      name: 'orch_worker_up',
      help: "1 while the host's worker heartbeats, else 0 (it missed its heartbeat)",
      labelNames: ['host'],
      registers,
    });
    this.workerCards = new Gauge({
      name: 'orch_worker_cards',
      help: "Cards the host's worker registered",
      labelNames: ['host'],
      registers,
    });
    this.experiments = new Gauge({
      name: 'orch_experiments',
      help: 'Experiments in Redis by state',
      labelNames: ['state'],
      registers,
    });
    this.ended = new Counter({
      name: 'orch_experiments_ended_total',
      help: 'Experiments that ended, by outcome: the verdict of a done one, else cancelled, failed or no-reps',
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of OUTCOMES) this.ended.inc({ outcome }, 0);
    this.reps = new Counter({
      name: 'orch_reps_total',
      help: "Reps answered (rank 0's rep lines on the experiments' streams, committed or not)",
      registers,
    });
    this.repSeconds = new Histogram({
      name: 'orch_rep_duration_seconds',
      help: 'Measured time of a rep: the sum of its timed steps (rank 0)',
      buckets: [0.001, 0.01, 0.1, 0.5, 1, 5, 30, 120],
      registers,
    });
    this.gateFailures = new Counter({
      name: 'orch_gate_failures_total',
      help: "Identity gates that failed (rank 0's gate lines with pass false)",
      registers,
    });
    this.nightlySuccess = new Gauge({
      name: 'orch_nightly_last_success_timestamp_seconds',
      help: "When each nightly suite's last successful (done) run ended, from the nightly history",
      labelNames: ['suite'],
      registers,
    });
    this.redisUp = new Gauge({
      name: 'orch_redis_up',
      help: "1 when the dashboard's Redis answered this scrape",
      registers,
    });
    this.redisMemory = new Gauge({
      name: 'orch_redis_used_memory_bytes',
      help: 'Redis used_memory (INFO memory)',
      registers,
    });
  }

  private countUp(key: string, total: number, inc: (n: number) => void): void {
    const before = this.seen.get(key) ?? 0;
    if (total > before) inc(total - before);
    this.seen.set(key, Math.max(before, total));
  }

  /** Reads everything once; the route then serializes the registry. */
  async refresh(): Promise<void> {
    await this.readHistory();
    try {
      await fromRedis(this.ctx, () => this.read(), 8000);
      this.redisUp.set(1);
    } catch (err) {
      this.redisUp.set(0);
      this.ctx.log.warn(
        { err: messageOf(err) },
        'metrics: Redis did not answer; serving orch_redis_up 0 and the last values',
      );
    }
  }

  /** The nightly history is read apart from Redis: either may be down while the other answers. */
  private async readHistory(): Promise<void> {
    try {
      const store = await this.history.get();
      const last = store ? await store.lastSuccess() : [];
      this.nightlySuccess.reset();
      for (const { suite, at } of last) this.nightlySuccess.set({ suite }, at / 1000);
    } catch (err) {
      this.ctx.log.warn(
        { err: messageOf(err), history: this.history.where },
        'metrics: the nightly history could not be read; serving the last values',
      );
    }
  }

  private async read(): Promise<void> {
    const { redis, prefix } = this.ctx;
    await this.readCards();
    const store = new ExperimentStore(redis, prefix);
    const ids = await store.list();
    const states = await store.states(ids);
    this.experiments.reset();
    for (const state of EXPERIMENT_STATES) this.experiments.set({ state }, states.filter((s) => s === state).length);

    this.waiting.reset();
    for (const reason of WAIT_REASONS) this.waiting.set({ reason }, 0);
    const attempts = new Map(this.settledAttempts);
    for (const id of ids.filter((_, i) => states[i] !== null && !TERMINAL_EXPERIMENT_STATES.has(states[i]!))) {
      const blocks = await store.blocks(id);
      for (const b of blocks) if (b.phase === 'waiting') this.waiting.inc({ reason: waitReasonCode(b.why) });
      tallyAttempts(attempts, blocks);
      await this.tail(store, id);
    }
    await this.settle(
      store,
      ids
        .filter((id, i) => TERMINAL_EXPERIMENT_STATES.has(states[i]!) && !this.settled.has(id))
        .slice(0, SETTLE_PER_SCRAPE),
      attempts,
    );
    for (const outcome of ATTEMPT_OUTCOMES)
      this.countUp(`attempts/${outcome}`, attempts.get(outcome) ?? 0, (d) => this.attempts.inc({ outcome }, d));
    this.countUp('retried', attempts.get('retried') ?? 0, (d) => this.retried.inc(d));

    this.buildWaiters.reset();
    this.buildWait.reset();
    for (const b of await readBuildState(redis, { prefix })) {
      this.buildWaiters.set({ host: b.host }, b.waiters.length);
      this.buildWait.set({ host: b.host }, Math.max(0, ...b.waiters.map((w) => w.waited_ms)) / 1000);
    }

    const info = await redis.info('memory');
    const used = /^used_memory:(\d+)/m.exec(info);
    if (used) this.redisMemory.set(Number(used[1]));
  }

  /** Cards by state, each card and each host's worker. */
  private async readCards(): Promise<void> {
    const s = await clusterStatus(this.ctx.redis, this.ctx.prefix, { all: false, limit: 1 });
    for (const g of [this.cards, this.cardUp, this.cardHeld, this.busy, this.workerUp, this.workerCards]) g.reset();
    for (const state of CARD_STATES) this.cards.set({ state }, 0);
    const perHost = new Map<string, { live: number; held: number; cards: number }>();
    for (const c of s.cards) {
      this.cards.inc({ state: !c.alive ? 'dead' : c.holder ? 'held' : 'free' });
      const card = { host: c.host, card: c.id, backend: c.backend };
      this.cardUp.set(card, c.alive ? 1 : 0);
      this.cardHeld.set(card, c.holder ? 1 : 0);
      const h = perHost.get(c.host) ?? { live: 0, held: 0, cards: 0 };
      h.cards++;
      if (c.alive) h.live++;
      if (c.alive && c.holder) h.held++;
      perHost.set(c.host, h);
    }
    for (const [host, h] of perHost) {
      this.busy.set({ host }, h.live === 0 ? 0 : h.held / h.live);
      // a host's cards share its heartbeat: any live card means its worker is up
      this.workerUp.set({ host }, h.live > 0 ? 1 : 0);
      this.workerCards.set({ host }, h.cards);
    }
  }

  /** Counts experiments that ended since the last scrape, once: their attempts, last stream entries and outcome. */
  private async settle(store: ExperimentStore, ids: string[], attempts: Map<string, number>): Promise<void> {
    const exps = (await Promise.all(ids.map((id) => store.get(id)))).filter((e): e is ExperimentRecord => e !== null);
    const outcomes = await experimentOutcomes(this.ctx.redis, this.ctx.prefix, exps);
    for (const [i, exp] of exps.entries()) {
      const outcome = outcomes[i];
      if (!outcome) continue;
      const blocks = await store.blocks(exp.id);
      tallyAttempts(this.settledAttempts, blocks);
      tallyAttempts(attempts, blocks);
      await this.tail(store, exp.id);
      this.streamAt.delete(exp.id);
      this.settled.add(exp.id);
      this.ended.inc({ outcome: outcome.outcome });
    }
  }

  /** The stream's entries since the last scrape. */
  private async tail(store: ExperimentStore, id: string): Promise<void> {
    const from = this.streamAt.get(id);
    const events = await readEvents(this.ctx.redis, store.keys.events(id), {}, from === undefined ? '-' : `(${from}`);
    for (const e of events) {
      this.streamAt.set(id, e.id);
      const line = e.event as StreamLine | null;
      if (!line || e.rank !== 0) continue;
      if (line.type === 'rep') {
        this.reps.inc();
        this.repSeconds.observe((line.step_ms ?? []).reduce((a, b) => a + b, 0) / 1000);
      } else if (line.type === 'gate' && line.pass === false) this.gateFailures.inc();
    }
  }
}

/** Adds `blocks`' ended attempts by outcome (ATTEMPT_OUTCOMES) and their retries (`retried`) to `into`. */
function tallyAttempts(
  into: Map<string, number>,
  blocks: readonly { attempt: number; attempts: readonly { outcome: string }[] }[],
): void {
  const add = (k: string, n: number) => into.set(k, (into.get(k) ?? 0) + n);
  for (const b of blocks) {
    for (const a of b.attempts) add(isOneOf(ATTEMPT_OUTCOMES, a.outcome) ? a.outcome : 'other', 1);
    add('retried', Math.max(0, b.attempt - 1));
  }
}
