/**
 * The grant loop: FIFO granting of cards to the waiting blocks (the decision is the pure
 * grant-planner.ts; this file reads its inputs and carries out its grants). A pass runs when
 * something may have freed or wanted cards — a block processor started waiting, an attempt
 * ended — and on a slow safety tick for what sends no event (cards registering, leases expiring).
 * Passes are coalesced: one at a time. A pass that fails (Redis full or gone) is not run again
 * before its back-off (failure-backoff.ts): a kick meanwhile runs it when the back-off ends.
 */
import type { Card } from '../../jobs/card.ts';
import { TERMINAL_BLOCK_PHASES, type BlockState, type ExperimentRecord, type GangPart } from '../../store/experiment-store.ts';
import { readStepHistory, type StepHistory } from '../../store/step-history.ts';
import { expectedBlockMs, workloadKey } from './expected-duration.ts';
import { compareQueued, planGrants, shapeKey, wantedBackend, type CardSlot, type WaitingBlock } from './grant-planner.ts';
import { spreadLeaseOwner } from '../../jobs/spread-gang.ts';
import { gangPlacement } from '../../jobs/plan.ts';
import { blockKey, type SchedulerContext, type Term } from './scheduler-context.ts';
import type { BuildGate } from './build-phase.ts';
import { failWaitingBlocks } from './fail-waiting-blocks.ts';
import { allows, describeNeed, specNeeds } from '../../jobs/worker-capabilities.ts';

export type GrantResult = { gang: Omit<GangPart, 'job'>[] } | { cancelled: string };

/** A waiting block in the pass's queue: what the planner reads of it, and where it came from. */
interface QueuedBlock extends WaitingBlock {
  exp: ExperimentRecord;
  block: number;
  st: BlockState;
}

interface Waiter {
  key: string;
  exp: ExperimentRecord;
  block: number;
  /** the waiting state the processor read: the base of the pass's compare-and-set of `why` */
  st: BlockState;
  expectedMs: number;
  resolve: (r: GrantResult) => void;
}

/**
 * A block's stored `why` is rewritten at most this often: at scale the head of the queue moves
 * every pass and every waiting block's reason ("behind <the new head>") with it, and rewriting
 * every waiting block's state on every pass cost more than the grants it decided (16 000 writes
 * for 1 536 blocks). What the user reads is at most this much behind.
 */
const WHY_REFRESH_MS = 5000;

/**
 * A block's first reason is written once it has waited this long: most blocks at scale are
 * granted within a pass or two, and writing a reason for each (a compare-and-set of its state)
 * was one of the scheduler's few commands per block. Until then the user reads it waiting.
 */
const WHY_FIRST_MS = 1000;

/**
 * At most this many waiting reasons are written per pass (the head of the queue first): 1 500
 * blocks first seen in one pass all came due together a second later, and writing them in one
 * pass held the next grants back behind 1 500 compare-and-sets.
 */
const WHY_WRITES_PER_PASS = 32;

/** The back-off channels of the grant loop (failure-backoff.ts). */
const PASS = 'scheduler: grant pass';
const GRANT = 'scheduler: lease grant (retried next pass)';
const WHY = "scheduler: a waiting block's reason (not written)";
const SETTLE = 'scheduler: settling an experiment (tried again next pass)';

/** How long an experiment's duration estimate is reused: the step history moves slowly. */
const ESTIMATE_TTL_MS = 1000;

/** How long a pass uses the live cards read before (see `cards`). */
const CARDS_TTL_MS = 500;

export class GrantLoop {
  private readonly waiters = new Map<string, Waiter>();
  /** attempts in flight, for backfill: their cards and when they should end */
  private readonly running = new Map<string, { cards: string[]; expectedEndMs: number }>();
  /**
   * Registered experiments: spec and plan are immutable after submit, so the record is read once
   * per term (its state and reason are always read fresh elsewhere); dropped when it settles.
   */
  private readonly experiments = new Map<string, Promise<ExperimentRecord | null>>();
  /**
   * Experiments whose every waiting block, at the last read of their block states, had a waiting
   * processor here. A block only becomes waiting again through a processor of this term (a
   * retry, which says so: `reread`), so for these the waiters are the waiting blocks and their
   * block states need not be read on every pass.
   */
  private readonly delivered = new Set<string>();
  private readonly histories = new Map<string, { at: number; history: Promise<StepHistory | null> }>();
  private readonly lastWhy = new Map<string, { why: string; at: number }>();
  /**
   * Blocks granted by a pass whose processor has not recorded the attempt yet: their state still
   * reads waiting, but they hold their cards. A pass that queued them again held cards back for
   * them (no waiter) and read their experiment's blocks again on every pass.
   */
  private readonly recording = new Set<string>();
  /** the active experiments the last pass read */
  private activeIds: string[] = [];
  private liveCards: { at: number; cards: Promise<Card[]> } | null = null;
  private readonly slotsOf = new WeakMap<Card[], CardSlot[]>();
  private term: Term | null = null;
  /** Starts the processor of a block the pass read waiting or running, when none of this term runs (block-lifecycle.ts `drive`). */
  drive: ((experiment: string, st: BlockState, term: Term) => void) | null = null;
  /** Settles an experiment whose every block ended (experiment-settling.ts); once per term unless it fails. */
  settle: ((experiment: string, term: Term) => Promise<void>) | null = null;
  private readonly settling = new Set<string>();
  /** refused experiments whose waiting blocks are being ended */
  private readonly refusing = new Set<string>();
  /** The build phase's answer per experiment (build-phase.ts): which hosts may take its blocks, or its failure. */
  gate: ((exp: ExperimentRecord) => Promise<BuildGate | null>) | null = null;
  private granting: Promise<void> | null = null;
  private kickedWhileGranting = false;
  private timer: NodeJS.Timeout | null = null;
  /** the pass after a failed one, at the end of its back-off */
  private retryTimer: NodeJS.Timeout | null = null;

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
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.term = null;
    // each waiting processor returns (it sees its term ended), so the next term's pass starts
    // one of its own for the block
    for (const w of this.waiters.values()) w.resolve({ cancelled: 'the leader\'s term ended' });
    this.waiters.clear();
    this.settling.clear();
    this.recording.clear();
    this.running.clear();
    this.experiments.clear();
    this.delivered.clear();
    this.activeIds = [];
    this.liveCards = null;
    this.histories.clear();
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
    const wait = this.ctx.backoff.waitMs(PASS);
    if (wait > 0) {
      this.retryTimer ??= setTimeout(() => {
        this.retryTimer = null;
        this.kick();
      }, wait);
      return;
    }
    // The pass starts once the events being handled now are handled (setImmediate: after this
    // turn's I/O callbacks, no timer delay): one read of the events streams brings the ends of
    // many attempts, each of which kicks, and with a long queue a pass costs the same for one
    // freed card as for ten. Kicks until it starts are covered by its reads; a kick after them
    // runs one more pass.
    this.granting = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => {
        this.kickedWhileGranting = false;
        return term.aborted ? undefined : this.pass(term);
      })
      .then(
        () => this.ctx.backoff.succeeded(PASS, PASS),
        (err: unknown) => void this.ctx.backoff.failed(PASS, PASS, err),
      )
      .finally(() => {
        this.granting = null;
        if (this.kickedWhileGranting) this.kick();
      });
  }

  /** Resolves with the gang leased for the block, or why it was cancelled while waiting. */
  waitForGrant(w: Omit<Waiter, 'key' | 'resolve'>): Promise<GrantResult> {
    return new Promise((resolve) => {
      const key = blockKey(w.exp.id, w.block);
      this.recording.delete(key);
      this.waiters.set(key, { ...w, key, resolve });
      this.kick();
    });
  }

  attemptStarted(key: string, cards: string[], expectedEndMs: number): void {
    this.recording.delete(key);
    this.running.set(key, { cards, expectedEndMs });
  }

  attemptEnded(key: string): void {
    this.running.delete(key);
    this.kick();
  }

  /**
   * The next pass reads the block states of `id` again, now: a block went back to waiting (a
   * retry), or its last processor here ended (it may have ended the experiment's last block, and
   * then the pass settles it).
   */
  reread(id: string): void {
    this.delivered.delete(id);
    this.kick();
  }

  forgetExperiment(id: string): void {
    this.experiments.delete(id);
    this.delivered.delete(id);
  }

  /** The registered experiment (spec and plan; not a fresh state), read once per term. */
  experiment(id: string): Promise<ExperimentRecord | null> {
    let exp = this.experiments.get(id);
    if (!exp) {
      exp = this.ctx.store.get(id);
      this.experiments.set(id, exp);
      // a failed or missing read is not remembered: the next caller reads again
      exp.then((e) => e ?? this.experiments.delete(id), () => this.experiments.delete(id));
    }
    return exp;
  }

  /** The expected duration of a block of `exp` (backfill), from a step history at most ESTIMATE_TTL_MS old. */
  async expectedMs(exp: ExperimentRecord): Promise<number> {
    const key = workloadKey(exp.spec);
    const now = Date.now();
    let h = this.histories.get(key);
    if (!h || now - h.at > ESTIMATE_TTL_MS) {
      h = { at: now, history: readStepHistory(this.ctx.redis, this.ctx.prefix, key) };
      this.histories.set(key, h);
      const mine = h;
      // a failed read is not reused
      h.history.catch(() => this.histories.get(key) === mine && this.histories.delete(key));
    }
    return expectedBlockMs(exp.plan, exp.spec, await h.history);
  }

  /**
   * One pass of FIFO granting. The queue is every `waiting` block of every active experiment,
   * read from Redis — not only the blocks whose processor already waits — so a block whose
   * processor is still starting never loses its place: a grant that falls to it is held back
   * this pass (its cards stay free for it), never given to a younger block. An experiment whose
   * waiting blocks all have processors waiting here (`delivered`) is not read again: its waiters
   * are its waiting blocks.
   */
  private async pass(term: Term): Promise<void> {
    const { store, leases } = this.ctx;
    const gates = new Map<string, Exclude<BuildGate, { failed: string }>>();
    const waitersOf = new Map<string, Waiter[]>();
    for (const w of this.waiters.values()) {
      const of = waitersOf.get(w.exp.id);
      if (of) of.push(w);
      else waitersOf.set(w.exp.id, [w]);
    }
    // Every read of the pass in one round trip (one pipeline on the scheduler's connection): the
    // queue, each experiment the last pass knew (its state, and its blocks unless delivered) and
    // the leases of the cards the last pass knew; only an experiment new since then costs a
    // second one. Every sequential round trip here is card time idle on every card freed since
    // the last pass.
    // the states in one command; the records from this term's cache; the blocks unless delivered
    const readMany = async (ids: string[]) => {
      const [states, rest] = await Promise.all([
        store.states(ids),
        Promise.all(ids.map((id) => Promise.all([this.experiment(id), this.delivered.has(id) || this.settling.has(id) ? null : store.blocks(id)]))),
      ]);
      return ids.map((id, i) => ({ id, state: states[i] ?? null, exp: rest[i]![0], blocks: rest[i]![1] }));
    };
    const cards = await this.cards();
    const knownIds = this.activeIds;
    const [ids, known, busy] = await Promise.all([store.active(), readMany(knownIds), leases.leased(cards.map((c) => c.id))]);
    this.activeIds = ids;
    const before = new Set(knownIds);
    const active = new Set(ids);
    const read = [...known.filter((r) => active.has(r.id)), ...(await readMany(ids.filter((id) => !before.has(id))))];
    // The queue in order (compareQueued): experiments by priority then submission, each one's
    // blocks by index. Sorting the experiments and then each one's blocks, instead of every
    // block of the queue against every other through the comparator, is most of a pass's sort.
    const runnable: { exp: ExperimentRecord; blocks: BlockState[] | null }[] = [];
    for (const { id, state, exp, blocks } of read) {
      // Being settled: every block ended, and nothing is left to grant or drive. Its blocks are
      // not read again while its reps are accounted for (at scale, settling took several passes,
      // and each read every block state of every experiment being settled).
      if (this.settling.has(id)) continue;
      // A submission the scheduler refuses (submit-admission.ts) gets no processor for a waiting
      // block: those end failed, and the experiment is settled once every block ended.
      const refused = exp ? this.ctx.refusal(exp) : null;
      // Every block not ended has a processor (a new one starts waiting, or re-attaches to the
      // attempt in flight after a failover); an experiment whose blocks all ended is settled.
      if (blocks && exp) {
        let open = 0;
        for (const b of blocks) {
          if (TERMINAL_BLOCK_PHASES.has(b.phase)) continue;
          open++;
          if (refused === null || b.phase !== 'waiting') this.drive?.(id, b, term);
        }
        if (open === 0) {
          this.settleOnce(id, term);
          continue;
        }
      }
      if (exp && refused !== null) {
        this.refuse(exp, refused);
        continue;
      }
      if (state === 'cancelling' || state === 'cancelled') {
        this.cancelWaiters(id);
        continue;
      }
      if (state !== 'queued' && state !== 'running') continue;
      if (!exp) continue;
      const gate = this.gate ? await this.gate(exp) : null;
      if (gate && 'failed' in gate) {
        this.cancelWaiters(id, gate.failed);
        continue;
      }
      if (gate) gates.set(id, gate);
      runnable.push({ exp, blocks });
    }
    runnable.sort((a, b) => compareQueued({ priority: a.exp.priority, seq: a.exp.seq, block: 0 }, { priority: b.exp.priority, seq: b.exp.seq, block: 0 }));
    // what the planner needs of a block: the same for every block of one experiment, made once
    // per experiment and copied into each of its queue entries (one object per waiting block)
    const shapeOf = (exp: ExperimentRecord): Omit<WaitingBlock, 'key' | 'expectedMs'> => {
      const fits = { ranks: exp.plan.ranks, backend: wantedBackend(exp), ...gangPlacement(exp.plan.placement) };
      return { ...fits, ...(gates.get(exp.id) ?? capable(exp)), shape: shapeKey(fits) };
    };
    // An experiment without a build phase that runs a command goes only to hosts whose workers
    // allow commands (one with a build phase builds only there, so its ready hosts are such).
    const capableOf = new Map<string, { hosts: ReadonlySet<string>; hostsWhy: string } | undefined>();
    const capable = (exp: ExperimentRecord) => {
      const need = specNeeds(exp.spec);
      const key = need.join(',');
      if (!capableOf.has(key)) {
        capableOf.set(key, need.length === 0 ? undefined : {
          hosts: new Set(cards.filter((c) => allows(c, need)).map((c) => c.host)),
          hostsWhy: `waiting for a host whose worker allows ${describeNeed(need)}`,
        });
      }
      return capableOf.get(key);
    };
    const queue: QueuedBlock[] = [];
    for (const { exp, blocks } of runnable) {
      const id = exp.id;
      const shape = shapeOf(exp);
      const mine: QueuedBlock[] = [];
      if (!blocks) {
        for (const w of waitersOf.get(id) ?? []) mine.push({ ...shape, key: w.key, expectedMs: w.expectedMs, exp, block: w.block, st: w.st });
      } else {
        const waiting = blocks.filter((b) => b.phase === 'waiting' && !this.recording.has(blockKey(id, b.block)));
        const undelivered = waiting.some((b) => !this.waiters.has(blockKey(id, b.block)));
        if (!undelivered) this.delivered.add(id);
        // one estimate per experiment for its blocks no processor waits for yet
        const estimate = undelivered ? await this.expectedMs(exp) : 0;
        for (const b of waiting) {
          const key = blockKey(id, b.block);
          mine.push({ ...shape, key, expectedMs: this.waiters.get(key)?.expectedMs ?? estimate, exp, block: b.block, st: b });
        }
      }
      mine.sort((a, b) => a.block - b.block);
      for (const q of mine) queue.push(q);
    }
    if (queue.length === 0) return;
    const now = Date.now();
    let whyBudget = WHY_WRITES_PER_PASS;
    const decision = planGrants({
      now,
      cards: this.slots(cards),
      busy,
      running: [...this.running.entries()].map(([key, r]) => ({ key, ...r })),
      waiting: queue,
      // only the reasons this pass may write (see WHY_REFRESH_MS)
      wantWhy: (key) => {
        const last = this.lastWhy.get(key);
        if (!last) {
          // first seen waiting: its first reason is due after WHY_FIRST_MS
          this.lastWhy.set(key, { why: '', at: now - WHY_REFRESH_MS + WHY_FIRST_MS });
          return false;
        }
        if (now - last.at < WHY_REFRESH_MS || whyBudget === 0) return false;
        whyBudget--;
        return true;
      },
    });
    if (term !== this.term || term.aborted) return;
    // The planned gangs are disjoint: their acquire calls go out together (each still all or none),
    // and each granted processor goes on (its attempt record, its host job) as soon as its own
    // lease is answered, so the pass's records and job adds go out together too.
    const acquiring = decision.grants.flatMap((g) => {
      const w = this.waiters.get(g.key);
      const granting = (w: Waiter) =>
        this.acquire(w, g.cards).then(
          (gang) => {
            this.ctx.backoff.succeeded(GRANT, GRANT);
            if (gang) this.granted(w, gang);
          },
          (err: unknown) => void this.ctx.backoff.failed(GRANT, GRANT, err, { key: w.key }),
        );
      return w ? [granting(w)] : []; // its processor is not waiting yet: its cards wait for it
    });
    if (decision.why.size > 0) {
      const byKey = new Map(queue.map((q) => [q.key, q]));
      for (const [key, why] of decision.why) {
        const q = byKey.get(key)!;
        const last = this.lastWhy.get(key);
        if (last && (last.why === why || now - last.at < WHY_REFRESH_MS)) continue;
        this.lastWhy.set(key, { why, at: now });
        // A compare-and-set on the state this pass read: the block may have been granted since.
        // Not awaited: the next pass need not wait for what only the user reads.
        void store.transitionBlock(q.exp.id, q.st, { ...q.st, why }).then(
          () => this.ctx.backoff.succeeded(WHY, WHY),
          (err: unknown) => void this.ctx.backoff.failed(WHY, WHY, err, { key }),
        );
      }
    }
    await Promise.all(acquiring);
  }

  /** Ends a refused experiment's waiting blocks (once at a time), then reads its blocks again to settle it. */
  private refuse(exp: ExperimentRecord, reason: string): void {
    if (this.refusing.has(exp.id)) return;
    this.refusing.add(exp.id);
    this.cancelWaiters(exp.id, reason);
    this.ctx.log.warn({ experiment: exp.id, code: 'SUBMIT_UNAUTHORIZED' }, 'refused an experiment without a valid submit signature: nothing planned or granted');
    failWaitingBlocks(this.ctx, exp, reason)
      .catch((err: unknown) => this.ctx.log.error({ err, experiment: exp.id }, 'scheduler: ending a refused experiment\'s blocks failed; the next pass tries again'))
      .finally(() => {
        this.refusing.delete(exp.id);
        this.reread(exp.id);
      });
  }

  private settleOnce(id: string, term: Term): void {
    if (!this.settle || this.settling.has(id)) return;
    if (this.ctx.backoff.waitMs(`settle:${id}`) > 0) return;
    this.settling.add(id);
    this.settle(id, term).then(
      () => this.ctx.backoff.succeeded(SETTLE, `settle:${id}`),
      (err: unknown) => {
        this.ctx.backoff.failed(SETTLE, `settle:${id}`, err, { experiment: id });
        this.settling.delete(id);
      },
    );
  }

  /** The planner's view of the live cards: one copy per list read (see `cards`), not one per pass. */
  private slots(cards: Card[]): CardSlot[] {
    let slots = this.slotsOf.get(cards);
    if (!slots) {
      slots = cards.map((c) => ({ id: c.id, host: c.host, backend: c.backend, index: c.index, version: c.version }));
      this.slotsOf.set(cards, slots);
    }
    return slots;
  }

  /**
   * The live cards, read again at most every CARDS_TTL_MS and in the background (the pass goes
   * on with the last list): they change when a host registers or stops heartbeating, and reading
   * and validating every card on every pass cost a round trip and a tenth of the scheduler's CPU.
   * A card of a host that just died may be granted meanwhile, as within its alive key's TTL
   * before; the attempt is lost and tried again.
   */
  private async cards(): Promise<Card[]> {
    const now = Date.now();
    if (!this.liveCards || now - this.liveCards.at > CARDS_TTL_MS) {
      const refresh = { at: now, cards: this.ctx.registry.liveCards() };
      const prior = this.liveCards;
      this.liveCards = refresh;
      refresh.cards.catch(() => this.liveCards === refresh && (this.liveCards = prior));
      // the first read of a term is waited for; later ones serve the next pass
      if (prior) {
        // cards that came or went: a pass on them now, not at the next event or tick
        const ids = (cs: Card[]) => cs.map((c) => c.id).join(',');
        void Promise.all([prior.cards, refresh.cards]).then(([a, b]) => ids(a) !== ids(b) && this.kick(), () => undefined);
        return prior.cards.catch(() => refresh.cards);
      }
    }
    return this.liveCards.cards;
  }

  private granted(w: Waiter, gang: Omit<GangPart, 'job'>[]): void {
    this.waiters.delete(w.key);
    this.recording.add(w.key);
    this.lastWhy.delete(w.key);
    w.resolve({ gang });
  }

  private cancelWaiters(id: string, reason = 'cancelled while waiting for cards'): void {
    for (const w of this.waiters.values()) {
      if (w.exp.id !== id) continue;
      this.waiters.delete(w.key);
      w.resolve({ cancelled: reason });
    }
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
