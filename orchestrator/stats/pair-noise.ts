/**
 * The noise of a comparison's paired log differences ln(arm / reference), split in two:
 *
 *   d_bk = δ + u_b + e_bk,   u_b ~ (0, between),   e_bk ~ (0, within)
 *
 * `within`: how much one pair's difference scatters inside its block (rep-to-rep noise that
 * pairing cannot remove); `between`: how much the block's mean difference moves from block to
 * block (an arm × block interaction: a card or session on which the arms differ by more or less).
 * A block factor shared by both arms cancels in each pair and is in neither.
 *
 * Method of moments of the one-way random-effects model (unequal block sizes allowed):
 * within = MSW, between = max(0, (MSB − MSW) / n0). One block gives no between estimate.
 */
import { pairArms, valueIndex } from './pairing.ts';
import type { PlanLike, RepValue } from './types.ts';

export interface PairNoise {
  arm: string;
  reference: string;
  pairs: number;
  blocks: number;
  /** variance of a pair's log difference inside its block */
  within: number;
  /** variance of the block mean log difference across blocks; null: fewer than 2 blocks with pairs */
  between: number | null;
}

/** The noise of `arm` vs `reference` in a run's values; null when no block has 2 pairs. */
export function pairNoise(
  plan: PlanLike,
  values: readonly RepValue[],
  arm: string,
  reference: string,
): PairNoise | null {
  const { pairs } = pairArms(plan, valueIndex(values), arm, reference);
  const byBlock = new Map<number, number[]>();
  for (const p of pairs) {
    const list = byBlock.get(p.block) ?? [];
    list.push(Math.log(p.x / p.y));
    byBlock.set(p.block, list);
  }
  const groups = [...byBlock.values()];
  const n = groups.reduce((s, g) => s + g.length, 0);
  const b = groups.length;
  if (n - b < 1) return null;
  const means = groups.map((g) => g.reduce((s, x) => s + x, 0) / g.length);
  const grand = groups.reduce((s, g) => s + g.reduce((t, x) => t + x, 0), 0) / n;
  const ssw = groups.reduce((s, g, i) => s + g.reduce((t, x) => t + (x - means[i]!) ** 2, 0), 0);
  const msw = ssw / (n - b);
  let between: number | null = null;
  if (b >= 2) {
    const msb = groups.reduce((s, g, i) => s + g.length * (means[i]! - grand) ** 2, 0) / (b - 1);
    const n0 = (n - groups.reduce((s, g) => s + g.length ** 2, 0) / n) / (b - 1);
    between = Math.max(0, (msb - msw) / n0);
  }
  return { arm, reference, pairs: n, blocks: b, within: msw, between };
}
