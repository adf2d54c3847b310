/**
 * `blocks.reps_per_block: auto` (pure): the size of the blocks after the first, from what the first
 * block's committed record measured, so that start-up is at most START_UP_SHARE of a block's lease.
 *
 * A block's lease is modelled as start-up (block-start to every rank's hello) + the rest that does
 * not grow with reps (the identity gates) + arms · k · rep, where rep is the first block's lease
 * time per rep (its reps, the worker's turnaround and the commit, over the reps it measured: one
 * a graceful stop cut short ran fewer than planned). Start-up is counted as card time counts it
 * (orchestrator/stats/busy-share.ts): ranks ready and the gates, what a block pays before its
 * first rep. (Start-up + gates) ≤ share · lease gives
 * k ≥ (start-up + gates) · (1 − share) / share / (arms · rep). Where the later blocks run a
 * prepare() in the host phase, a block also lasts as long as it (arms · k · rep ≥ prepare), so
 * that the next block's prepare() is done when the card is handed to it.
 *
 * k stays within the spec's bounds: never fewer reps per arm than the spec's own blocks hold
 * (`first_reps`), never more than a block may hold (`max_reps`), never more than are left. The
 * reps left after the first block then go into as many blocks as hold k each, spread evenly over
 * them (`groupSizes`): every arm runs the same reps in each block, and the total is the plan's,
 * only grouped in fewer, larger blocks — but never fewer than the gangs that could run side by
 * side (`parallel`), so that a host of free cards is not left idle for a target on one lease.
 */

/**
 * The largest share of a block's lease start-up may take. 3 %, not 5 %: a busy share of 95 % leaves
 * 5 % for start-up and for what a rep itself does not keep busy (its capture, host time between
 * steps); on the H200 the torch-decode example's reps kept the card busy 92.0 % of a block whose
 * reps spanned 93.3 % of it (bench/h200/runs/2026-12-04c/auto-blocks-torch-decode.txt).
 */
export const START_UP_SHARE = 0.03;

export interface SizingInput {
  /** the start-up a later block pays inside its lease (ms): the first block's block-start → every hello, less `overlapped_ms` */
  startup_ms: number;
  /** the first block's in-lease prepare() that later blocks run in the host phase, overlapped (ms; absent: none) */
  overlapped_ms?: number;
  /** the rest of its lease that does not grow with reps: the identity gates (ms) */
  fixed_ms: number;
  /** its lease per rep (ms): lease less start-up and gates, over the reps it measured */
  rep_ms: number;
  arms: number;
  /** reps per arm of the first block, the spec's `reps` */
  first_reps: number;
  /** reps per arm left for the blocks after it */
  remaining: number;
  /** the most reps per arm a block may hold */
  max_reps: number;
  /**
   * the gangs that could run at once (live cards over ranks): the later blocks are never fewer
   * than these while each can keep `first_reps`, so larger blocks do not leave free cards idle
   * and stretch the experiment's wall time; absent: 1
   */
  parallel?: number;
}

export interface BlockSizing {
  /** reps per arm of each block after the first, in order (every arm the same in a block) */
  sizes: number[];
  /** the smallest reps per arm per block that keeps start-up within START_UP_SHARE and outlasts the next block's prepare() */
  wanted: number;
  /** what held the size below `wanted`: the spec's bound on reps per block, the reps left, or the cards free to run blocks side by side; null: nothing */
  held_by: 'max_reps' | 'remaining' | 'cards' | null;
  /** the start-up a later block pays inside its lease, its gates included, as card time counts it (ms) */
  startup_ms: number;
  /** the first block's prepare() taken off it: later blocks run it in the host phase (ms; absent: none) */
  overlapped_ms?: number;
  /** the lease a block of sizes[0] reps per arm is expected to take (ms) */
  lease_ms: number;
}

export function sizeBlocks(i: SizingInput): BlockSizing {
  const perRep = Math.max(i.rep_ms, Number.EPSILON);
  const repsTime = ((i.startup_ms + i.fixed_ms) * (1 - START_UP_SHARE)) / START_UP_SHARE;
  // the next block's prepare() runs in the host phase while this block holds the card: a block
  // shorter than it leaves the next one waiting in its lease for the rest (on the H200, 2-5 s of
  // a 36-38 s prepare() behind blocks of about 30 s, bench/h200/runs/2026-12-04c/card-time3.txt)
  const coverPrepare = Math.ceil((i.overlapped_ms ?? 0) / (i.arms * perRep));
  const wanted = Math.max(i.first_reps, Math.ceil(repsTime / (i.arms * perRep)), coverPrepare);
  const k = Math.max(1, Math.min(wanted, i.max_reps, i.remaining));
  const grouped = groupSizes(i.remaining, k, i.max_reps);
  const side = Math.min(i.parallel ?? 1, Math.floor(i.remaining / i.first_reps));
  const sizes = grouped.length >= side ? grouped : evenSizes(i.remaining, side);
  const largest = sizes[0] ?? 0;
  const held_by =
    sizes !== grouped
      ? 'cards'
      : k >= wanted || largest >= wanted
        ? null
        : k === i.remaining
          ? 'remaining'
          : 'max_reps';
  return {
    sizes,
    wanted,
    held_by,
    startup_ms: i.startup_ms + i.fixed_ms,
    ...(i.overlapped_ms === undefined ? {} : { overlapped_ms: i.overlapped_ms }),
    lease_ms: i.startup_ms + i.fixed_ms + i.arms * largest * i.rep_ms,
  };
}

/**
 * `total` reps in blocks of at least `k` each where they go (as many blocks as hold k, the rest
 * spread over them: a short last block would pay the same start-up for fewer reps), at most `most`
 * each; sizes differ by one at most, larger first.
 */
export function groupSizes(total: number, k: number, most: number): number[] {
  if (total <= 0) return [];
  let parts = Math.max(1, Math.floor(total / k));
  if (Math.ceil(total / parts) > most) parts = Math.ceil(total / most);
  return evenSizes(total, parts);
}

/** `total` over `parts` parts, sizes differing by one at most, larger first. */
function evenSizes(total: number, parts: number): number[] {
  const base = Math.floor(total / parts);
  const larger = total - base * parts;
  return Array.from({ length: parts }, (_, p) => (p < larger ? base + 1 : base));
}

/** "blocks of 12 reps: start-up 31 s of 640 s" — the plan's and the report's line. */
export function describeSizing(arms: number, s: BlockSizing): string {
  const largest = s.sizes[0] ?? 0;
  const seconds = (ms: number) => `${Number((ms / 1000).toPrecision(3))} s`;
  const held =
    s.held_by === null
      ? ''
      : s.held_by === 'max_reps'
        ? ` (held at the bound on reps per block; ${s.wanted} would keep start-up within ${START_UP_SHARE * 100} %)`
        : s.held_by === 'cards'
          ? ` (${s.sizes.length} blocks, one per card free to run them side by side; ${s.wanted} would keep start-up within ${START_UP_SHARE * 100} %)`
          : ` (every rep left in ${s.sizes.length === 1 ? 'one block' : 'these blocks'}; ${s.wanted} would keep start-up within ${START_UP_SHARE * 100} %)`;
  const overlapped =
    s.overlapped_ms === undefined ? '' : `, prepare() ${seconds(s.overlapped_ms)} in the host phase before the lease`;
  return `blocks of ${largest} reps per arm (${largest * arms} reps): start-up ${seconds(s.startup_ms)} of ${seconds(s.lease_ms)}${overlapped}${held}`;
}
