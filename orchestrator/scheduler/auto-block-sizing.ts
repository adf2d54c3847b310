/**
 * The scheduler's side of `blocks.reps_per_block: auto` (jobs/reps-per-block.ts): the blocks after
 * the first wait, taking no card, until it ends (grant-loop.ts, `firstBlockOpen`). When it commits,
 * its commit record (jobs/commit-record.ts: block-start, every hello, every gate, the commit, on
 * the committing worker's clock) gives its start-up and, over the reps it measured, its lease per
 * rep; jobs/block-sizing.ts sizes the later blocks from them (never fewer than the gangs the live
 * cards could run side by side), and the sizing is written beside the registered plan, and the
 * registered blocks the larger ones left without reps end stopped, *before* the first block is
 * recorded ended: a first block seen ended always has its sizing (the record is then read as the
 * sized plan, jobs/sized-plan.ts), and no emptied block can be granted. A first block that fails or
 * is cancelled, or measured no rep, sizes nothing: the later blocks run as registered.
 */
import type { Logger } from 'pino';
import { type BlockSizing, describeSizing, sizeBlocks } from '../../jobs/block-sizing.ts';
import type { CommitRecord } from '../../jobs/commit-record.ts';
import { LIMITS } from '../../jobs/limits.ts';
import type { Plan } from '../../jobs/plan.ts';
import { plannedReps, repKey } from '../../jobs/rep-ref.ts';
import { type BlockState, type ExperimentRecord, TERMINAL_BLOCK_PHASES } from '../../store/experiment-store.ts';
import type { SchedulerContext } from './scheduler-context.ts';

/** The block whose measure sizes the others. */
export const FIRST_BLOCK = 0;

/** Why a later block of an auto-sized experiment waits (orch status, the pages; /metrics' `sizing`). */
export const HELD_FOR_SIZING = `waiting for block ${FIRST_BLOCK} to commit: its measured start-up sizes the blocks after it (blocks.reps_per_block: auto)`;

/** Whether `exp`'s blocks after the first must still wait for it: auto, and its first block not ended. */
export function firstBlockOpen(exp: ExperimentRecord, blocks: readonly BlockState[]): boolean {
  if (exp.plan.reps_per_block !== 'auto') return false;
  const first = blocks.find((b) => b.block === FIRST_BLOCK);
  return first !== undefined && !TERMINAL_BLOCK_PHASES.has(first.phase);
}

/** Whether block `block` of `exp`, just committed, is the one that sizes the others (sized already, by a leader before: its emptied blocks still to stop). */
export function isAutoFirstBlock(exp: ExperimentRecord, block: number): boolean {
  return block === FIRST_BLOCK && exp.plan.reps_per_block === 'auto';
}

/**
 * The sizing the first block's commit record gives, `parallel` gangs able to run side by side, or
 * null when the record lacks the timeline (an older worker) or the block measured no rep.
 * `measured`: the first block's reps with a committed result. Its lease per rep is over those, not
 * over its planned reps: a worker stopped gracefully commits the block after a few reps with the
 * rest recorded not run, and a capture that failed leaves its arm's reps unsent; over the planned
 * reps, a block cut short at 2 of 20 reps per arm measured a rep 10× too short and sized the later
 * blocks 10× too large.
 */
export function sizingFromCommit(
  plan: Plan,
  commit: CommitRecord,
  parallel: number,
  measured: number,
): BlockSizing | null {
  const { started, ready, gated, committed } = commit;
  if (started === undefined || ready === undefined || gated === undefined || committed === undefined || measured < 1)
    return null;
  const whole = Math.max(ready - started, 0);
  const prepare = firstBlockPrepare(plan, commit);
  return sizeBlocks({
    startup_ms: Math.max(whole - (prepare?.in_lease === true ? prepare.prepare_ms : 0), 0),
    ...(prepare === null ? {} : { overlapped_ms: prepare.prepare_ms }),
    fixed_ms: Math.max(gated - ready, 0),
    rep_ms: Math.max(committed - gated, 0) / measured,
    arms: plan.arms.length,
    first_reps: plan.reps,
    remaining: plan.reps * (plan.blocks.length - 1),
    max_reps: LIMITS.orch.reps.max,
    parallel,
  });
}

/**
 * The first block's prepare(), which every later block runs in the host phase while the block
 * before holds the card (worker/command/resident-command-rank.ts prepareNextIfDue), or null: a
 * rank alone on its card that said how long its prepare() took. `in_lease`: the first block paid it
 * inside its lease (no build phase prepared it: worker/command/prepare-first.ts), so it comes off
 * the start-up a later block pays; either way a later block must outlast the next one's prepare().
 * Sizing the later blocks by the first block's whole start-up would make them as large as if each
 * paid a half-minute read of weights again.
 */
export function firstBlockPrepare(plan: Plan, commit: CommitRecord): { prepare_ms: number; in_lease: boolean } | null {
  const only = commit.startup?.length === 1 ? commit.startup[0] : undefined;
  if (plan.ranks !== 1 || only === undefined || only.prepare_ms === undefined) return null;
  return { prepare_ms: only.prepare_ms, in_lease: only.host_phase !== true };
}

/** Sizes and writes the later blocks of `exp` from its first block's commit; false when nothing was written. */
export async function sizeLaterBlocks(
  ctx: Pick<SchedulerContext, 'store' | 'results' | 'registry'>,
  exp: ExperimentRecord,
  log: Logger,
): Promise<boolean> {
  const [commit, results, cards] = await Promise.all([
    ctx.results.commitRecord(exp.id, FIRST_BLOCK),
    ctx.results.measuredFields(exp.id),
    // the cards registered live now, whoever holds them: what the later blocks could spread over
    ctx.registry.liveCards(),
  ]);
  const measured = plannedReps(exp.plan, FIRST_BLOCK).filter((r) => results.has(repKey(r))).length;
  const parallel = Math.max(1, Math.floor(cards.length / exp.plan.ranks));
  const sizing = commit === null ? null : sizingFromCommit(exp.plan, commit, parallel, measured);
  if (sizing === null) {
    const why =
      measured === 0
        ? 'measured no rep (its worker stopped before one), so no time per rep'
        : 'has no timeline in its commit record';
    log.warn({ measured }, `auto block sizing: the first block ${why}; the later blocks run as registered`);
    return false;
  }
  const written = await ctx.store.writeBlockSizing(exp.id, sizing);
  log.info({ sizing, written, measured }, 'auto block sizing: the blocks after the first sized from its start-up');
  return written;
}

/** The registered blocks the sized plan left without reps (they end stopped), and why. */
export function blocksLeftEmpty(sized: ExperimentRecord): { blocks: Set<number>; reason: string } | null {
  const registered = sized.registeredPlan;
  const sizing = sized.plan.sized;
  if (registered === undefined || sizing === undefined) return null;
  const kept = new Set(sized.plan.blocks.map((b) => b.index));
  const blocks = new Set(registered.blocks.map((b) => b.index).filter((i) => !kept.has(i)));
  if (blocks.size === 0) return null;
  return {
    blocks,
    reason: `blocks.reps_per_block: auto: its reps run in the ${sizing.sizes.length} larger block(s) after the first; ${describeSizing(sized.plan.arms.length, sizing)}`,
  };
}
