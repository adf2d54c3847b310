/**
 * `/metrics` in Prometheus' text format (prom-client, a registry of its own). Read at each
 * scrape from the stores: cards by state, waiting blocks by reason, block attempts by outcome,
 * the build locks' waits, card busy share per host, Redis memory; and from the experiments'
 * event streams, tailed from where the last scrape stopped: reps, their measured time, gate
 * failures; and from the nightly history, when each suite last succeeded. Counters start at what
 * the streams held when the dashboard started.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { readBuildState } from '../../store/build-state.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { readEvents } from '../results/collect-results.ts';
import { clusterStatus } from '../experiment/cluster-status.ts';
import { fromRedis, type DashboardContext } from './dashboard-context.ts';
import { dashboardHistory } from './dashboard-history.ts';

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
  private readonly cards;
  private readonly waiting;
  private readonly attempts;
  private readonly retried;
  private readonly buildWaiters;
  private readonly buildWait;
  private readonly busy;
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
    this.cards = new Gauge({ name: 'orch_cards', help: 'Registered cards by state (free, held, dead: host missed its heartbeat)', labelNames: ['state'], registers });
    this.waiting = new Gauge({ name: 'orch_blocks_waiting', help: 'Blocks waiting for a gang, by the scheduler\'s reason', labelNames: ['reason'], registers });
    this.attempts = new Counter({ name: 'orch_block_attempts_total', help: 'Block attempts that ended, by outcome (lost: its gang was lost; failed; retried ones count as lost)', labelNames: ['outcome'], registers });
    this.retried = new Counter({ name: 'orch_blocks_retried_total', help: 'Block attempts started again after a lost one (attempt > 1)', registers });
    this.buildWaiters = new Gauge({ name: 'orch_build_lock_waiters', help: 'Requests waiting for the build lock, per host', labelNames: ['host'], registers });
    this.buildWait = new Gauge({ name: 'orch_build_lock_wait_seconds', help: 'Longest current wait for the build lock, per host', labelNames: ['host'], registers });
    this.busy = new Gauge({ name: 'orch_card_busy_share', help: 'Share of a host\'s live cards held by a gang (0..1)', labelNames: ['host'], registers });
    this.reps = new Counter({ name: 'orch_reps_total', help: 'Reps answered (rank 0\'s rep lines on the experiments\' streams, committed or not)', registers });
    this.repSeconds = new Histogram({ name: 'orch_rep_duration_seconds', help: 'Measured time of a rep: the sum of its timed steps (rank 0)', buckets: [0.001, 0.01, 0.1, 0.5, 1, 5, 30, 120], registers });
    this.gateFailures = new Counter({ name: 'orch_gate_failures_total', help: 'Identity gates that failed (rank 0\'s gate lines with pass false)', registers });
    this.nightlySuccess = new Gauge({ name: 'orch_nightly_last_success_timestamp_seconds', help: 'When each nightly suite\'s last successful (done) run ended, from the nightly history', labelNames: ['suite'], registers });
    this.redisUp = new Gauge({ name: 'orch_redis_up', help: '1 when the dashboard\'s Redis answered this scrape', registers });
    this.redisMemory = new Gauge({ name: 'orch_redis_used_memory_bytes', help: 'Redis used_memory (INFO memory)', registers });
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
      this.ctx.log.warn({ err: (err as Error).message }, 'metrics: Redis did not answer; serving orch_redis_up 0 and the last values');
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
      this.ctx.log.warn({ err: (err as Error).message, history: this.history.where }, 'metrics: the nightly history could not be read; serving the last values');
    }
  }

  private async read(): Promise<void> {
    const { redis, prefix } = this.ctx;
    const s = await clusterStatus(redis, prefix, { all: true });
    this.cards.reset();
    for (const state of ['free', 'held', 'dead']) this.cards.set({ state }, 0);
    const perHost = new Map<string, { live: number; held: number }>();
    for (const c of s.cards) {
      this.cards.inc({ state: !c.alive ? 'dead' : c.holder ? 'held' : 'free' });
      const h = perHost.get(c.host) ?? { live: 0, held: 0 };
      if (c.alive) h.live++;
      if (c.alive && c.holder) h.held++;
      perHost.set(c.host, h);
    }
    this.busy.reset();
    for (const [host, h] of perHost) this.busy.set({ host }, h.live === 0 ? 0 : h.held / h.live);

    this.waiting.reset();
    for (const e of s.experiments) for (const b of e.blocks) if (b.phase === 'waiting') this.waiting.inc({ reason: b.why ?? 'unknown' });

    const store = new ExperimentStore(redis, prefix);
    const outcomes = new Map<string, number>();
    let retried = 0;
    for (const e of s.experiments) {
      for (const b of await store.blocks(e.id)) {
        for (const a of b.attempts) outcomes.set(a.outcome, (outcomes.get(a.outcome) ?? 0) + 1);
        retried += Math.max(0, b.attempt - 1);
      }
      await this.tail(store, e.id);
    }
    for (const [outcome, n] of outcomes) this.countUp(`attempts/${outcome}`, n, (d) => this.attempts.inc({ outcome }, d));
    this.countUp('retried', retried, (d) => this.retried.inc(d));

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
