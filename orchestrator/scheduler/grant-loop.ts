/**
 * The grant loop: FIFO granting of cards to the waiting blocks (the decision is the pure
 * grant-planner.ts): a pass reads the head of the queue (queue-window.ts), plans, and carries the
 * plan out (grant-apply.ts). A pass runs when
 * something may have freed or wanted cards — a block processor started waiting, an attempt
 * ended — and on a slow safety tick for what sends no event (cards registering, leases expiring).
 * Passes are coalesced: one at a time. A pass that fails (Redis full or gone) is not run again
 * before its back-off (failure-backoff.ts): a kick meanwhile runs it when the back-off ends.
 */
import type { Card } from '../../jobs/card.ts';
import { gangPlacement } from '../../jobs/plan.ts';
import { allows, describeNeed, specNeeds } from '../../jobs/worker-capabilities.ts';
import {
  type BlockState,
  type ExperimentRecord,
  type GangPart,
  TERMINAL_BLOCK_PHASES,
} from '../../store/experiment-store.ts';
import { readStepHistory, type StepHistory } from '../../store/step-history.ts';
import { FIRST_BLOCK, firstBlockOpen } from './auto-block-sizing.ts';
import type { BuildGate } from './build-phase.ts';
import { plannedBlockMs, sizedBlockMs, workloadKey } from './expected-duration.ts';
import { failWaitingBlocks } from './fail-waiting-blocks.ts';
import { GrantApplier, type GrantResult, type QueuedBlock, type Waiter } from './grant-apply.ts';
import { cardNeed, compareQueued, planGrants, shapeKey, type WaitingBlock } from './grant-planner.ts';
import { LiveCards } from './live-cards.ts';
import { QueueWindow, type WindowEntry } from './queue-window.ts';
import { blockKey, type SchedulerContext, type Term } from './scheduler-context.ts';

export type { GrantResult } from './grant-apply.ts';

/** What the grant loop calls out to, given at construction (scheduler.ts wires them). */
export interface GrantLoopRooms {
  /** Starts the processor of a block the pass read waiting or running, when none of this term runs (block-lifecycle.ts `drive`). */
  drive: (experiment: string, st: BlockState, term: Term) => void;
  /** Settles an experiment whose every block ended (experiment-settling.ts); once per term unless it fails. */
  settle: (experiment: string, term: Term) => Promise<void>;
  /** The build phase's answer per experiment (build-phase.ts): which hosts may take its blocks, or its failure. */
  gate: (exp: ExperimentRecord) => Promise<BuildGate | null>;
}

/** The back-off channels of the grant loop (failure-backoff.ts). */
const PASS = 'scheduler: grant pass';
const SETTLE = 'scheduler: settling an experiment (tried again next pass)';

/** How long an experiment's duration estimate is reused: the step history moves slowly. */
const ESTIMATE_TTL_MS = 1000;

/**
 * The queue window (queue-window.ts) holds at least this many blocks, and four per live card:
 * backfill looks that far behind the head, and a pass's reads and plan are bounded by it, not by
 * the length of the queue.
 */
const MIN_WINDOW_BLOCKS = 256;
/**
 * The states of the queue behind the window are read every this many safety polls (one script
 * over all of them): what changes them from outside is a cancel, seen that much later there.
 */
const TAIL_STATES_POLLS = 5;
const WINDOW_BLOCKS_PER_CARD = 4;

/** An active experiment of the pass's window with its block states (null: not read, its waiters are its waiting blocks). */
interface ReadExperiment extends WindowEntry {
  blocks: BlockState[] | null;
}

/** What a pass read: the planner's input but for its clock. */
interface PassRead {
  cards: Card[];
  busy: ReadonlySet<string>;
  queue: QueuedBlock[];
  /** waiting blocks kept out of the queue: an auto-sized experiment's later blocks (auto-block-sizing.ts) */
  held?: QueuedBlock[];
}

/** A term's queue window; an experiment whose stored record does not parse is failed and logged. */
function queueWindow(ctx: SchedulerContext): QueueWindow {
  return new QueueWindow(ctx.store, TAIL_STATES_POLLS * ctx.tuning.safetyPollMs, (id, err) =>
    ctx.log.error({ experiment: id, err }, 'experiment failed: its record in Redis does not parse'),
  );
}

export class GrantLoop {
  private readonly waiters = new Map<string, Waiter>();
  /** attempts in flight, for backfill: their cards and when they should end */
  private readonly running = new Map<string, { cards: string[]; expectedEndMs: number; known: boolean }>();
  private window: QueueWindow;
  private readonly cards: LiveCards;
  private readonly applier: GrantApplier;
  /**
   * Experiments whose every waiting block, at the last read of their block states, had a waiting
   * processor here. A block only becomes waiting again through a processor of this term (a
   * retry, which says so: `reread`), so for these the waiters are the waiting blocks and their
   * block states need not be read on every pass.
   */
  private readonly delivered = new Set<string>();
  /** experiments whose blocks this term drives: they stay in the pass's window until settled */
  private readonly driven = new Set<string>();
  private readonly histories = new Map<string, { at: number; history: Promise<StepHistory | null> }>();
  /**
   * Blocks granted by a pass whose processor has not recorded the attempt yet: their state still
   * reads waiting, but they hold their cards. A pass that queued them again held cards back for
   * them (no waiter) and read their experiment's blocks again on every pass.
   */
  private readonly recording = new Set<string>();
  private readonly settling = new Set<string>();
  /** refused experiments whose waiting blocks are being ended */
  private readonly refusing = new Set<string>();
  /** auto-sized experiments whose first block has not ended (auto-block-sizing.ts): their later blocks are not queued */
  private readonly firstBlockOpen = new Map<string, boolean>();
  private term: Term | null = null;
  private granting: Promise<void> | null = null;
  private kickedWhileGranting = false;
  private timer: NodeJS.Timeout | null = null;
  /** the pass after a failed one, at the end of its back-off */
  private retryTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly ctx: SchedulerContext,
    private readonly rooms: GrantLoopRooms,
  ) {
    this.window = queueWindow(ctx);
    this.cards = new LiveCards(ctx.registry, () => this.kick());
    this.applier = new GrantApplier(ctx);
  }

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
    for (const w of this.waiters.values()) w.resolve({ cancelled: "the leader's term ended" });
    this.waiters.clear();
    for (const set of [this.settling, this.recording, this.delivered, this.driven]) set.clear();
    this.firstBlockOpen.clear();
    this.running.clear();
    this.window = queueWindow(this.ctx);
    this.cards.forget();
    this.histories.clear();
    this.applier.forget();
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

  /** `known`: the expected end rests on measured step times, not backfill's guess. */
  attemptStarted(key: string, cards: string[], expectedEndMs: number, known: boolean): void {
    this.recording.delete(key);
    this.running.set(key, { cards, expectedEndMs, known });
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
    this.firstBlockOpen.delete(id);
    this.window.forget(id);
    this.delivered.delete(id);
    this.driven.delete(id);
  }

  /** The registered experiment (spec and plan; not a fresh state), read once per term. */
  experiment(id: string): Promise<ExperimentRecord | null> {
    return this.window.record(id);
  }

  /** The planned duration of a block of `exp` (backfill), from a step history at most ESTIMATE_TTL_MS old. */
  async expectedMs(exp: ExperimentRecord, block?: number): Promise<{ ms: number; known: boolean }> {
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
    return plannedBlockMs(exp.plan, exp.spec, await h.history, block);
  }

  /** One pass of FIFO granting: read the queue's head, plan (grant-planner.ts), carry the plan out. */
  private async pass(term: Term): Promise<void> {
    const read = await this.read(term);
    const now = Date.now();
    // said before the queue is looked at: while block 0 runs, the held blocks are all that waits
    if (read.held && read.held.length > 0) this.applier.noteHeld(read.held, now);
    if (read.queue.length === 0) return;
    const decision = planGrants({
      now,
      cards: this.cards.slots(read.cards),
      busy: read.busy,
      running: [...this.running.entries()].map(([key, r]) => ({ key, ...r })),
      waiting: read.queue,
      wantWhy: this.applier.wantWhy(now),
    });
    if (term !== this.term || term.aborted) return;
    await this.applier.apply(decision, read.queue, now, this.waiters, (w, gang) => this.granted(w, gang));
  }

  /**
   * The pass's reads: the live cards and their leases, the queue window (queue-window.ts) and the
   * block states of each of its experiments not `delivered`. The queue is every `waiting` block of
   * the window — not only the blocks whose processor already waits — so a block whose processor
   * is still starting never loses its place: a grant that falls to it is held back this pass (its
   * cards stay free for it), never given to a younger block.
   */
  private async read(term: Term): Promise<PassRead> {
    const { store, leases } = this.ctx;
    const cards = await this.cards.current();
    const budget = Math.max(MIN_WINDOW_BLOCKS, WINDOW_BLOCKS_PER_CARD * cards.length);
    const keep = (id: string) => this.driven.has(id) || this.settling.has(id);
    const needsBlocks = (id: string) => !this.delivered.has(id) && !this.settling.has(id);
    // Every read of the pass in one round trip (autopipelined on the scheduler's connection): the
    // queue's news, the window's states and blocks, the cards' leases; only an experiment new
    // since the last pass costs a second one. Every sequential round trip here is card time idle
    // on every card freed since the last pass.
    const known = this.window.pick(budget, keep);
    const reads = new Map(known.filter((e) => needsBlocks(e.id)).map((e) => [e.id, store.blocks(e.id)] as const));
    const [, busy] = await Promise.all([
      this.window.refresh(known),
      leases.leased(cards.map((c) => c.id)),
      ...reads.values(),
    ]);
    const entries = this.window.entries(this.window.pick(budget, keep));
    for (const e of entries) if (needsBlocks(e.id) && !reads.has(e.id)) reads.set(e.id, store.blocks(e.id));
    const blocks = await Promise.all(entries.map((e) => (needsBlocks(e.id) ? (reads.get(e.id) ?? null) : null)));
    // a pass of an ended term writes nothing into the next term's sets (it would mark the next
    // term's experiments delivered, and none of their blocks would be driven)
    if (term !== this.term || term.aborted) return { cards, busy, queue: [] };
    const gates = new Map<string, Exclude<BuildGate, { failed: string }>>();
    const runnable: ReadExperiment[] = [];
    for (const [i, e] of entries.entries()) {
      const r = { ...e, blocks: blocks[i] ?? null };
      const gate = await this.admit(r, term);
      if (gate === false) continue;
      if (gate) gates.set(e.id, gate);
      runnable.push(r);
    }
    return { cards, busy, ...(await this.queue(runnable, cards, gates, term)) };
  }

  /**
   * What the pass does with one experiment of its window before queueing it: drives a processor
   * for each block not ended, settles it when none is left, ends a refused one's waiting blocks,
   * cancels its waiters when it is being cancelled or its build failed. False: nothing of it is
   * queued; otherwise its build gate (null: none).
   */
  private async admit(r: ReadExperiment, term: Term): Promise<Exclude<BuildGate, { failed: string }> | null | false> {
    const { id, exp, state, blocks } = r;
    // Being settled: every block ended, and nothing is left to grant or drive. Its blocks are
    // not read again while its reps are accounted for.
    if (this.settling.has(id)) return false;
    // A submission the scheduler refuses (submit-admission.ts) gets no processor for a waiting
    // block: those end failed, and the experiment is settled once every block ended.
    const refused = this.ctx.refusal(exp);
    // Every block not ended has a processor (a new one starts waiting, or re-attaches to the
    // attempt in flight after a failover); an experiment whose blocks all ended is settled.
    if (blocks) {
      let open = 0;
      for (const b of blocks) {
        if (TERMINAL_BLOCK_PHASES.has(b.phase)) continue;
        open++;
        if (refused === null || b.phase !== 'waiting') this.drive(id, b, term);
      }
      if (open === 0) {
        this.settleOnce(id, term);
        return false;
      }
    }
    if (refused !== null) {
      this.refuse(exp, refused);
      return false;
    }
    if (state === 'cancelling' || state === 'cancelled') {
      this.cancelWaiters(id);
      return false;
    }
    if (state !== 'queued' && state !== 'running') return false;
    const gate = await this.rooms.gate(exp);
    if (gate && 'failed' in gate) {
      this.cancelWaiters(id, gate.failed);
      return false;
    }
    return gate;
  }

  /**
   * The queue in order (compareQueued): experiments by priority then submission, each one's
   * blocks by index. Sorting the experiments and then each one's blocks, instead of every block
   * of the queue against every other through the comparator, is most of a pass's sort.
   */
  private async queue(
    runnable: ReadExperiment[],
    cards: Card[],
    gates: Map<string, Exclude<BuildGate, { failed: string }>>,
    term: Term,
  ): Promise<{ queue: QueuedBlock[]; held: QueuedBlock[] }> {
    runnable.sort((a, b) =>
      compareQueued(
        { priority: a.exp.priority, seq: a.exp.seq, block: 0 },
        { priority: b.exp.priority, seq: b.exp.seq, block: 0 },
      ),
    );
    const capable = capableHosts(cards);
    const waitersOf = new Map<string, Waiter[]>();
    for (const w of this.waiters.values()) {
      const of = waitersOf.get(w.exp.id);
      if (of) of.push(w);
      else waitersOf.set(w.exp.id, [w]);
    }
    const queue: QueuedBlock[] = [];
    const heldBack: QueuedBlock[] = [];
    for (const { id, exp, blocks } of runnable) {
      // what the planner needs of a block: the same for every block of one experiment, made once
      // per experiment and copied into each of its queue entries
      const fits = { ranks: exp.plan.ranks, ...cardNeed(exp), ...gangPlacement(exp.plan.placement) };
      const shape: Omit<WaitingBlock, 'key' | 'expectedMs' | 'expectedKnown'> = {
        ...fits,
        ...(gates.get(id) ?? capable(exp)),
        shape: shapeKey(fits),
      };
      const mine: QueuedBlock[] = [];
      if (!blocks) {
        for (const w of waitersOf.get(id) ?? [])
          mine.push({
            ...shape,
            key: w.key,
            expectedMs: w.expectedMs,
            expectedKnown: w.expectedKnown,
            exp,
            block: w.block,
            st: w.st,
          });
      } else {
        const waiting = blocks.filter((b) => b.phase === 'waiting' && !this.recording.has(blockKey(id, b.block)));
        const undelivered = waiting.some((b) => !this.waiters.has(blockKey(id, b.block)));
        if (!undelivered && term === this.term) this.delivered.add(id);
        // one estimate per experiment for its blocks no processor waits for yet
        const estimate = undelivered ? await this.expectedMs(exp) : { ms: 0, known: true };
        for (const b of waiting) {
          const key = blockKey(id, b.block);
          const w = this.waiters.get(key);
          // a block sized after its processor began to wait: what the first block measured, not
          // the estimate the waiter brought from the registered plan
          const sized = sizedBlockMs(exp.plan, b.block);
          mine.push({
            ...shape,
            key,
            expectedMs: sized ?? w?.expectedMs ?? estimate.ms,
            expectedKnown: sized !== null || (w?.expectedKnown ?? estimate.known),
            exp,
            block: b.block,
            st: b,
          });
        }
      }
      if (blocks) this.firstBlockOpen.set(id, firstBlockOpen(exp, blocks));
      const held = this.firstBlockOpen.get(id) === true;
      mine.sort((a, b) => a.block - b.block);
      // auto sizing: the blocks after the first wait for its measure (auto-block-sizing.ts), taking no card
      for (const q of mine) (!held || q.block === FIRST_BLOCK ? queue : heldBack).push(q);
    }
    return { queue, held: heldBack };
  }

  private drive(id: string, st: BlockState, term: Term): void {
    if (term !== this.term) return;
    this.driven.add(id);
    this.rooms.drive(id, st, term);
  }

  /** Ends a refused experiment's waiting blocks (once at a time), then reads its blocks again to settle it. */
  private refuse(exp: ExperimentRecord, reason: string): void {
    if (this.refusing.has(exp.id)) return;
    this.refusing.add(exp.id);
    this.cancelWaiters(exp.id, reason);
    this.ctx.log.warn(
      { experiment: exp.id, code: 'SUBMIT_UNAUTHORIZED' },
      'refused an experiment without a valid submit signature: nothing planned or granted',
    );
    failWaitingBlocks(this.ctx, exp, reason)
      .catch((err: unknown) =>
        this.ctx.log.error(
          { err, experiment: exp.id },
          "scheduler: ending a refused experiment's blocks failed; the next pass tries again",
        ),
      )
      .finally(() => {
        this.refusing.delete(exp.id);
        this.reread(exp.id);
      });
  }

  /**
   * A sequential experiment decided (sequential-stop.ts), or auto sizing left blocks without reps
   * (`only`, auto-block-sizing.ts): its waiting blocks end stopped, and their waiters with them.
   */
  async stopWaiting(exp: ExperimentRecord, reason: string, only?: ReadonlySet<number>): Promise<void> {
    // the blocks first: a waiter resolved after sees its block moved and writes nothing
    await failWaitingBlocks(this.ctx, exp, reason, 'stopped', only);
    this.cancelWaiters(exp.id, reason, only);
    this.reread(exp.id);
  }

  private settleOnce(id: string, term: Term): void {
    if (this.settling.has(id)) return;
    if (this.ctx.backoff.waitMs(`settle:${id}`) > 0) return;
    this.settling.add(id);
    this.rooms.settle(id, term).then(
      () => this.ctx.backoff.succeeded(SETTLE, `settle:${id}`),
      (err: unknown) => {
        this.ctx.backoff.failed(SETTLE, `settle:${id}`, err, { experiment: id });
        this.settling.delete(id);
      },
    );
  }

  private granted(w: Waiter, gang: Omit<GangPart, 'job'>[]): void {
    this.waiters.delete(w.key);
    this.recording.add(w.key);
    w.resolve({ gang });
  }

  private cancelWaiters(id: string, reason = 'cancelled while waiting for cards', only?: ReadonlySet<number>): void {
    for (const w of this.waiters.values()) {
      if (w.exp.id !== id || (only !== undefined && !only.has(w.block))) continue;
      this.waiters.delete(w.key);
      w.resolve({ cancelled: reason });
    }
  }
}

/**
 * An experiment without a build phase that runs a command goes only to hosts whose workers allow
 * commands (one with a build phase builds only there, so its ready hosts are such): per need, the
 * hosts of `cards` that allow it, made once per pass.
 */
function capableHosts(
  cards: Card[],
): (exp: ExperimentRecord) => { hosts: ReadonlySet<string>; hostsWhy: string } | undefined {
  const byNeed = new Map<string, { hosts: ReadonlySet<string>; hostsWhy: string } | undefined>();
  return (exp) => {
    const need = specNeeds(exp.spec);
    const key = need.join(',');
    if (!byNeed.has(key)) {
      byNeed.set(
        key,
        need.length === 0
          ? undefined
          : {
              hosts: new Set(cards.filter((c) => allows(c, need)).map((c) => c.host)),
              hostsWhy: `waiting for a host whose worker allows ${describeNeed(need)}`,
            },
      );
    }
    return byNeed.get(key);
  };
}
