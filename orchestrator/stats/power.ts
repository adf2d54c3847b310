/**
 * Power of the comparison the analysis makes (compare.ts): the paired t on the log ratios of all
 * pairs, a verdict only when its CI lies wholly beyond the ±min_effect band. With `reps` pairs in
 * each of `blocks` blocks (N = reps · blocks) and the noise split as in pair-noise.ts:
 *
 *   the estimate's true variance     V   = (within + reps · between) / N
 *   the standard error the test sees  se² = (within + between · (N − reps) / (N − 1)) / N
 *
 * (the test pools every pair, so the between-block part is in its sd only diluted; that is why
 * more reps in fewer blocks buy less than their count says). The effect is detected when
 * estimate − t(1−α/2, N−1) · se clears the band's edge:
 *
 *   power ≈ T_{N−1}((distance − t(1−α/2, N−1) · se) / √V)
 *
 * with distance the log distance from the effect to the band (mde.ts). Without between-block
 * noise this is the usual t approximation mde.ts inverts; the t (not a normal) carries the
 * uncertainty of the sd the test estimates.
 */

import { studentCdf, studentQuantile } from './distributions.ts';
import { distanceToBand } from './mde.ts';

export interface NoiseParts {
  within: number;
  between: number;
}

export interface PowerQuery {
  /** Relative effect to detect, signed (−0.02: 2 % lower). */
  effect: number;
  noise: NoiseParts;
  alpha: number;
  min_effect: number;
}

/** Probability that a run of `reps` pairs per block in `blocks` blocks gives the verdict. */
export function pairedPower(q: PowerQuery, reps: number, blocks: number): number {
  const n = reps * blocks;
  if (n < 2) return 0;
  const distance = distanceToBand(q.effect, q.min_effect);
  const { within, between } = q.noise;
  const se = Math.sqrt((within + (between * (n - reps)) / (n - 1)) / n);
  const sdTrue = Math.sqrt((within + reps * between) / n);
  const margin = distance - studentQuantile(1 - q.alpha / 2, n - 1) * se;
  if (sdTrue === 0) return margin > 0 ? 1 : 0;
  return studentCdf(margin / sdTrue, n - 1);
}

/** What one block costs: its start-up, and one rep of every arm (a round). */
export interface BlockCost {
  startup_ms: number;
  round_ms: number;
}

export interface Design {
  reps: number;
  blocks: number;
  power: number;
  /** blocks one after another on one gang: blocks · (start-up + reps · round) */
  wall_ms: number;
}

export interface DesignBounds {
  minReps: number;
  maxReps: number;
  maxBlocks: number;
  /** arms × reps × blocks at most this (the planner's bound) */
  maxPlanReps: number;
  arms: number;
}

export const wallMs = (cost: BlockCost, reps: number, blocks: number): number =>
  blocks * (cost.startup_ms + reps * cost.round_ms);

/**
 * The design of least wall time reaching `target` power; null when none within the bounds does.
 * For each block count the fewest reps that reach it (power rises with reps), by bisection.
 */
export function cheapestDesign(q: PowerQuery, target: number, cost: BlockCost, b: DesignBounds): Design | null {
  let best: Design | null = null;
  for (let blocks = 1; blocks <= b.maxBlocks; blocks++) {
    if (best !== null && blocks * cost.startup_ms + blocks * b.minReps * cost.round_ms > best.wall_ms) break;
    const maxReps = Math.min(b.maxReps, Math.floor(b.maxPlanReps / (b.arms * blocks)));
    if (maxReps < b.minReps || pairedPower(q, maxReps, blocks) < target) continue;
    let lo = b.minReps;
    let hi = maxReps;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (pairedPower(q, mid, blocks) >= target) hi = mid;
      else lo = mid + 1;
    }
    const wall = wallMs(cost, lo, blocks);
    if (best === null || wall < best.wall_ms)
      best = { reps: lo, blocks, power: pairedPower(q, lo, blocks), wall_ms: wall };
  }
  return best;
}
