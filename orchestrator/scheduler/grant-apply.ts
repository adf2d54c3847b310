/**
 * Carrying out a grant pass's decision (grant-planner.ts): each planned gang leased all or none
 * and handed to its waiting processor, and the waiting reasons the pass may write written.
 */

import { spreadLeaseOwner } from '../../jobs/spread-gang.ts';
import type { BlockState, ExperimentRecord, GangPart } from '../../store/experiment-store.ts';
import { HELD_FOR_SIZING } from './auto-block-sizing.ts';
import type { CardSlot, GrantDecision, WaitingBlock } from './grant-planner.ts';
import type { SchedulerContext } from './scheduler-context.ts';

export type GrantResult = { gang: Omit<GangPart, 'job'>[] } | { cancelled: string };

/** A waiting block in the pass's queue: what the planner reads of it, and where it came from. */
export interface QueuedBlock extends WaitingBlock {
  exp: ExperimentRecord;
  block: number;
  st: BlockState;
}

/** A block's processor waiting for its grant (block-lifecycle.ts). */
export interface Waiter {
  key: string;
  exp: ExperimentRecord;
  block: number;
  /** the waiting state the processor read: the base of the pass's compare-and-set of `why` */
  st: BlockState;
  expectedMs: number;
  /** false: expectedMs is backfill's guess (expected-duration.ts plannedBlockMs) */
  expectedKnown: boolean;
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

/** The back-off channels (failure-backoff.ts). */
const GRANT = 'scheduler: lease grant (retried next pass)';
const WHY = "scheduler: a waiting block's reason (not written)";

export class GrantApplier {
  private readonly lastWhy = new Map<string, { why: string; at: number }>();

  constructor(private readonly ctx: SchedulerContext) {}

  /** Which blocks' reasons a pass at `now` may write (see WHY_REFRESH_MS): the planner builds only those. */
  wantWhy(now: number): (key: string) => boolean {
    let budget = WHY_WRITES_PER_PASS;
    return (key) => {
      const last = this.lastWhy.get(key);
      if (!last) {
        // first seen waiting: its first reason is due after WHY_FIRST_MS
        this.lastWhy.set(key, { why: '', at: now - WHY_REFRESH_MS + WHY_FIRST_MS });
        return false;
      }
      if (now - last.at < WHY_REFRESH_MS || budget === 0) return false;
      budget--;
      return true;
    };
  }

  /**
   * The planned gangs are disjoint: their acquire calls go out together (each still all or none),
   * and each granted processor goes on (its attempt record, its host job) as soon as its own
   * lease is answered. A grant to a block whose processor is not waiting yet is held: its cards
   * wait for it.
   */
  async apply(
    decision: GrantDecision,
    queue: QueuedBlock[],
    now: number,
    waiters: ReadonlyMap<string, Waiter>,
    granted: (w: Waiter, gang: Omit<GangPart, 'job'>[]) => void,
  ): Promise<void> {
    const { backoff } = this.ctx;
    const acquiring = decision.grants.flatMap((g) => {
      const w = waiters.get(g.key);
      if (!w) return [];
      return [
        this.acquire(w, g.cards).then(
          (gang) => {
            backoff.succeeded(GRANT, GRANT);
            if (gang) {
              this.lastWhy.delete(w.key);
              granted(w, gang);
            }
          },
          (err: unknown) => void backoff.failed(GRANT, GRANT, err, { key: w.key }),
        ),
      ];
    });
    if (decision.why.size > 0) this.writeWhy(decision.why, queue, now);
    await Promise.all(acquiring);
  }

  /** Blocks the pass held back for auto sizing: their reason, written as any waiting block's is. */
  noteHeld(held: QueuedBlock[], now: number): void {
    this.writeWhy(new Map(held.map((q) => [q.key, HELD_FOR_SIZING])), held, now);
  }

  /** The term ended. */
  forget(): void {
    this.lastWhy.clear();
  }

  private writeWhy(whys: Map<string, string>, queue: QueuedBlock[], now: number): void {
    const byKey = new Map(queue.map((q) => [q.key, q]));
    for (const [key, why] of whys) {
      const q = byKey.get(key)!;
      const last = this.lastWhy.get(key);
      if (last && (last.why === why || now - last.at < WHY_REFRESH_MS)) continue;
      this.lastWhy.set(key, { why, at: now });
      // A compare-and-set on the state this pass read: the block may have been granted since.
      // Not awaited: the next pass need not wait for what only the user reads.
      void this.ctx.store.transitionBlock(q.exp.id, q.st, { ...q.st, why }).then(
        () => this.ctx.backoff.succeeded(WHY, WHY),
        (err: unknown) => void this.ctx.backoff.failed(WHY, WHY, err, { key }),
      );
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
    const r = await this.ctx.leases.acquireGang({
      cards: slots.map((s) => s.id),
      owner,
      ttlMs: this.ctx.tuning.grantTtlMs,
      experiment: w.exp.id,
      block: w.block,
    });
    if (!r.granted) {
      this.ctx.log.info({ key: w.key, busy: r.busy }, 'grant raced with another lease; retrying next pass');
      return null;
    }
    let first = 0;
    return [...byHost].map(([host, cards]) => {
      const part = spread
        ? { host, cards, epoch: r.epoch, world: slots.length, first_rank: first }
        : { host, cards, epoch: r.epoch };
      first += cards.length;
      return part;
    });
  }
}
