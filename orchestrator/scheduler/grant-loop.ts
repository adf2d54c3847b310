/**
 * The grant loop: FIFO granting of cards to the waiting blocks (the decision is the pure
 * grant-planner.ts; this file reads its inputs and carries out its grants). A pass runs when
 * something may have freed or wanted cards — a block processor started waiting, an attempt
 * ended — and on a slow safety tick for what sends no event (cards registering, leases expiring).
 * Passes are coalesced: one at a time.
 */
import type { BlockState, ExperimentRecord, GangPart } from '../../store/experiment-store.ts';
import { readStepHistory } from '../../store/step-history.ts';
import { expectedBlockMs, workloadKey } from './expected-duration.ts';
import { compareQueued, planGrants, type CardSlot, type WantedBackend } from './grant-planner.ts';
import { spreadLeaseOwner } from '../../jobs/spread-gang.ts';
import { gangPlacement } from '../../jobs/plan.ts';
import { blockKey, type SchedulerContext, type Term } from './scheduler-context.ts';

export type GrantResult = { gang: Omit<GangPart, 'job'>[] } | { cancelled: string };

interface Waiter {
  key: string;
  exp: ExperimentRecord;
  block: number;
  expectedMs: number;
  resolve: (r: GrantResult) => void;
}

/** What a block of this experiment needs from a card's backend. */
export function wantedBackend(exp: Pick<ExperimentRecord, 'spec'>): WantedBackend {
  const w = exp.spec.workload;
  return w.runtime === 'native' ? w.backend : 'any';
}

export class GrantLoop {
  private readonly waiters = new Map<string, Waiter>();
  /** attempts in flight, for backfill: their cards and when they should end */
  private readonly running = new Map<string, { cards: string[]; expectedEndMs: number }>();
  /** registered experiments (immutable but for their state, which is always read fresh) */
  private readonly experiments = new Map<string, ExperimentRecord>();
  private readonly lastWhy = new Map<string, string>();
  private term: Term | null = null;
  private granting: Promise<void> | null = null;
  private kickedWhileGranting = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly ctx: SchedulerContext) {}

  /** Starts the safety tick for a term. */
  begin(term: Term): void {
    this.term = term;
    const tick = () => {
      if (term.aborted) return;
      this.kick();
      this.timer = setTimeout(tick, this.ctx.tuning.safetyPollMs);
    };
    tick();
  }

  /** The term ended: forget what it knew (the next term reads it all again). */
  end(): void {
    if (this.timer) clearTimeout(this.timer);
    this.term = null;
    this.waiters.clear();
    this.running.clear();
    this.experiments.clear();
    this.lastWhy.clear();
  }

  /**
   * Runs a grant pass now (coalesced: one at a time). A kick during a pass runs one more pass
   * after it: what it announced (cards freed, a block waiting) may have come after the pass's
   * reads, and dropping it left those cards idle until the safety tick.
   */
  kick(): void {
    const term = this.term;
    if (!term || term.aborted) return;
    if (this.granting) {
      this.kickedWhileGranting = true;
      return;
    }
    this.kickedWhileGranting = false;
    this.granting = this.pass(term)
      .catch((err) => this.ctx.log.error({ err }, 'scheduler: grant pass failed'))
      .finally(() => {
        this.granting = null;
        if (this.kickedWhileGranting) this.kick();
      });
  }

  /** Resolves with the gang leased for the block, or why it was cancelled while waiting. */
  waitForGrant(w: Omit<Waiter, 'key' | 'resolve'>): Promise<GrantResult> {
    return new Promise((resolve) => {
      const key = blockKey(w.exp.id, w.block);
      this.waiters.set(key, { ...w, key, resolve });
      this.kick();
    });
  }

  attemptStarted(key: string, cards: string[], expectedEndMs: number): void {
    this.running.set(key, { cards, expectedEndMs });
  }

  attemptEnded(key: string): void {
    this.running.delete(key);
    this.kick();
  }

  forgetExperiment(id: string): void {
    this.experiments.delete(id);
  }

  async expectedMs(exp: ExperimentRecord): Promise<number> {
    return expectedBlockMs(exp.plan, exp.spec, await readStepHistory(this.ctx.redis, this.ctx.prefix, workloadKey(exp.spec)));
  }

  /**
   * One pass of FIFO granting. The queue is every `waiting` block of every active experiment,
   * read from Redis — not only the blocks whose BullMQ job has reached a processor yet — so a
   * block delivered late never loses its place: a grant that falls to an undelivered block is
   * held back this pass (its cards stay free for it), never given to a younger block.
   */
  private async pass(term: Term): Promise<void> {
    const { store, registry, leases } = this.ctx;
    const queue: { key: string; exp: ExperimentRecord; block: number; st: BlockState; expectedMs: number }[] = [];
    // Every experiment's reads at once (one round trip's wait, not a few per experiment), and
    // one estimate per experiment for its blocks no processor waits for yet: at scale the
    // sequential reads made a pass take longer than the grants it decides.
    const read = await Promise.all(
      (await store.active()).map(async (id) => {
        const [state, exp, blocks] = await Promise.all([store.state(id), this.experiment(id), store.blocks(id)]);
        const waiting = blocks.filter((b) => b.phase === 'waiting');
        const undelivered = exp && waiting.some((b) => !this.waiters.has(blockKey(id, b.block))) ? await this.expectedMs(exp) : 0;
        return { id, state, exp, waiting, undelivered };
      }),
    );
    for (const { id, state, exp, waiting, undelivered } of read) {
      if (state === 'cancelling' || state === 'cancelled') {
        this.cancelWaiters(id);
        continue;
      }
      if (state !== 'queued' && state !== 'running') continue;
      if (!exp) continue;
      for (const b of waiting) {
        const key = blockKey(id, b.block);
        queue.push({ key, exp, block: b.block, st: b, expectedMs: this.waiters.get(key)?.expectedMs ?? undelivered });
      }
    }
    if (queue.length === 0) return;
    queue.sort((a, b) => compareQueued({ ...a.exp, block: a.block }, { ...b.exp, block: b.block }));
    const cards = await registry.liveCards();
    const slots: CardSlot[] = cards.map((c) => ({ id: c.id, host: c.host, backend: c.backend, index: c.index, version: c.version }));
    const busy = new Set((await leases.held(cards.map((c) => c.id))).map((l) => l.card));
    const decision = planGrants({
      now: Date.now(),
      cards: slots,
      busy,
      running: [...this.running.entries()].map(([key, r]) => ({ key, ...r })),
      waiting: queue.map((q) => ({ key: q.key, ranks: q.exp.plan.ranks, backend: wantedBackend(q.exp), ...gangPlacement(q.exp.plan.placement), expectedMs: q.expectedMs })),
    });
    if (term !== this.term || term.aborted) return;
    // The planned gangs are disjoint: their acquire calls go out together (each still all or none).
    const acquiring = decision.grants.flatMap((g) => {
      const w = this.waiters.get(g.key);
      return w ? [{ w, gang: this.acquire(w, g.cards) }] : []; // not delivered yet: its cards wait for it
    });
    for (const { w, gang } of acquiring) {
      // a failed call is this grant's alone: the others went out with it and must still be answered
      const got = await gang.catch((err: unknown) => (this.ctx.log.error({ err, key: w.key }, 'scheduler: lease grant failed; retrying next pass'), null));
      if (!got) continue;
      this.waiters.delete(w.key);
      this.lastWhy.delete(w.key);
      w.resolve({ gang: got });
    }
    const byKey = new Map(queue.map((q) => [q.key, q]));
    await Promise.all(
      [...decision.why].map(async ([key, why]) => {
        const q = byKey.get(key)!;
        if (this.lastWhy.get(key) === why) return;
        this.lastWhy.set(key, why);
        // a compare-and-set on the state this pass read: the block may have been granted since
        await store.transitionBlock(q.exp.id, q.st, { ...q.st, why });
      }),
    );
  }

  private cancelWaiters(id: string): void {
    for (const w of this.waiters.values()) {
      if (w.exp.id !== id) continue;
      this.waiters.delete(w.key);
      w.resolve({ cancelled: 'cancelled while waiting for cards' });
    }
  }

  private async experiment(id: string): Promise<ExperimentRecord | null> {
    let exp = this.experiments.get(id);
    if (!exp) {
      const got = await this.ctx.store.get(id);
      if (!got) return null;
      exp = got;
      this.experiments.set(id, exp);
    }
    return exp;
  }

  /**
   * Leases the granted cards all or none. A gang across hosts is one lease call too: its parts
   * share one epoch, so the leading part's one commit is fenced by every part's leases, and its
   * owner is the block (jobs/spread-gang.ts), under which every part renews its own cards.
   */
  private async acquire(w: Waiter, slots: CardSlot[]): Promise<Omit<GangPart, 'job'>[] | null> {
    const byHost = new Map<string, string[]>();
    for (const s of slots) byHost.set(s.host, [...(byHost.get(s.host) ?? []), s.id]);
    const spread = byHost.size > 1;
    const [onlyHost] = byHost.keys();
    const owner = spread ? spreadLeaseOwner(w.exp.id, w.block) : (onlyHost as string);
    const r = await this.ctx.leases.acquireGang({ cards: slots.map((s) => s.id), owner, ttlMs: this.ctx.tuning.grantTtlMs, experiment: w.exp.id, block: w.block });
    if (!r.granted) {
      this.ctx.log.info({ key: w.key, busy: r.busy }, 'grant raced with another lease; retrying next pass');
      return null;
    }
    let first = 0;
    return [...byHost].map(([host, cards]) => {
      const part = spread ? { host, cards, epoch: r.epoch, world: slots.length, first_rank: first } : { host, cards, epoch: r.epoch };
      first += cards.length;
      return part;
    });
  }
}
