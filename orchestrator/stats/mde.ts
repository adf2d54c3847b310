/**
 * Minimum detectable effect, before and after a run.
 *
 * Noise is the standard deviation of the paired log differences ln(arm / reference): from a prior
 * A/A run (`Comparison.log_ratio.sd` of its `aa`) or from the per-rep coefficient of variation
 * of the spec (`noiseFromCv`: two independent reps per pair, so √2 · cv).
 *
 * A verdict needs its CI beyond the ±min_effect band, so the distance to cover is from the true
 * effect to the band's edge, not to 0. With n pairs the CI half-width is t(1−α/2, n−1)·sd/√n and
 * the estimate falls short of the truth by more than t(power, n−1)·sd/√n with probability
 * 1 − power; both must fit in that distance.
 */
import { studentQuantile } from './distributions.ts';

export interface MdeQuery {
  /** Relative effect to detect (−0.02: 2 % lower). */
  effect: number;
  /** sd of the paired log differences. */
  noise: number;
  alpha: number;
  power: number;
  min_effect: number;
}

export const noiseFromCv = (cv: number): number => Math.SQRT2 * cv;

/** Log distance from the effect to the edge of the min_effect band on its side; ≤ 0: inside. */
export function distanceToBand(effect: number, min_effect: number): number {
  return effect < 0 ? Math.log1p(-min_effect) - Math.log1p(effect) : Math.log1p(effect) - Math.log1p(min_effect);
}

function halfWidthFactor(pairs: number, alpha: number, power: number): number {
  const df = pairs - 1;
  return (studentQuantile(1 - alpha / 2, df) + studentQuantile(power, df)) / Math.sqrt(pairs);
}

/** Pairs needed to detect `effect` with `power`; null when the effect lies inside the band. */
export function requiredPairs(q: MdeQuery, maxPairs = 100_000): number | null {
  const dist = distanceToBand(q.effect, q.min_effect);
  if (!(dist > 0) || !(q.noise >= 0)) return null;
  if (q.noise === 0) return 2;
  for (let n = 2; n <= maxPairs; n++) {
    if (halfWidthFactor(n, q.alpha, q.power) * q.noise <= dist) return n;
  }
  return null;
}

/** Reps per arm per block to reach `pairs` pairs over `blocks` blocks (at least 2). */
export function repsPerBlock(pairs: number, blocks: number): number {
  return Math.max(2, Math.ceil(pairs / blocks));
}

/** Smallest |relative effect| beyond the band detectable with `pairs` pairs at this noise. */
export function detectableEffect(
  pairs: number,
  noise: number,
  alpha: number,
  power: number,
  min_effect = 0,
): number | null {
  if (pairs < 2 || !Number.isFinite(noise)) return null;
  return Math.expm1(halfWidthFactor(pairs, alpha, power) * noise + Math.log1p(min_effect));
}

/** Noise for planning from a prior run: its A/A comparison, else its primary comparison. */
export function noiseFromAnalysis(a: {
  aa: { log_ratio: { sd: number | null } } | null;
  primary: { log_ratio: { sd: number | null } } | null;
}): number | null {
  return a.aa?.log_ratio.sd ?? a.primary?.log_ratio.sd ?? null;
}
