/**
 * Carry-over: does an arm run differently depending on the arm that ran just before it in the
 * block? A Williams order balances first-order carry-over over the arms, so a carry-over shared
 * by every arm cancels from the comparisons; one that hits one arm after one predecessor (a graph
 * arm slower after an eager arm left the launch state unsettled) does not, and it is the arm's
 * measurement, not the arm, that changed. order-effects.ts asks the same of positions in the block;
 * this asks it of predecessors, read from the plan's run order of each rep's block.
 *
 * Model: ln value = block + arm + carry(arm, preceding arm), fitted by turns (block + arm take up
 * part of a carry-over that some blocks hold more of than others); r = ln value − block − arm.
 * Each (arm, preceding arm) cell of reps that
 * did not open their block (the first rep is a position effect) is compared with the same arm
 * after itself — the state its own rep leaves, so the one a predecessor can disturb — where that
 * cell has two reps or more, else with the arm's reps after its other predecessors (a Williams
 * order of one rep per arm never repeats an arm): effect = exp(mean r in the cell − mean r in the
 * baseline) − 1, se = s·√(1/n_cell + 1/n_base) with s² the full model's residual variance and
 * Student's t on its degrees of freedom. Flagged: p under alpha / (cells tested), Bonferroni over
 * the cells, with the cell's mean and its median rep both at least min_effect from the baseline on
 * one side: a carry-over moves every rep after that predecessor, one slow rep moves one.
 */
import { median } from './descriptive.ts';
import { studentTwoSidedP } from './distributions.ts';
import { pClause, pct, signedPct } from './format-number.ts';
import { dummies, leastSquaresOn } from './linear-model.ts';
import type { CarryOver, CarryOverCell, PlanLike, RepValue } from './types.ts';

interface Rest {
  sum: number;
  n: number;
  /** the residuals themselves: a cell's median says whether its reps agree */
  xs: number[];
}

const NONE: Rest = { sum: 0, n: 0, xs: [] };
const join = (a: Rest, b: Rest): Rest => ({ sum: a.sum + b.sum, n: a.n + b.n, xs: [...a.xs, ...b.xs] });

/** Block + arm effects absorb part of a carry-over that is not spread evenly over the blocks: fit both by turns, until the carry moves less than BACKFIT_TOLERANCE (ln units). */
const BACKFIT_ROUNDS = 50;
const BACKFIT_TOLERANCE = 1e-7;

/** Per arm, its reps' residuals summed by preceding arm; `cell[i]` the arm and predecessor of rep i, or null when it opened its block. */
function cellsOf(
  residuals: readonly number[],
  cell: readonly ({ arm: string; after: string } | null)[],
): Map<string, Map<string, Rest>> {
  const byArm = new Map<string, Map<string, Rest>>();
  cell.forEach((k, i) => {
    if (k === null) return;
    const cells = byArm.get(k.arm) ?? new Map<string, Rest>();
    cells.set(k.after, join(cells.get(k.after) ?? NONE, { sum: residuals[i]!, n: 1, xs: [residuals[i]!] }));
    byArm.set(k.arm, cells);
  });
  return byArm;
}

/** The baseline an arm's cells are measured against: itself after itself (two reps or more), else its other predecessors. */
function baselineOf(arm: string, byBefore: Map<string, Rest>, after: string): { base: Rest; against: string } {
  const self = byBefore.get(arm);
  if (self !== undefined && self.n >= 2) return { base: self, against: `${arm} after itself` };
  const all = [...byBefore].filter(([a]) => a !== after).reduce((x, [, c]) => join(x, c), NONE);
  return { base: all, against: `${arm} after the others` };
}

const meanOf = (r: Rest): number => (r.n === 0 ? 0 : r.sum / r.n);

export function carryOver(
  plan: PlanLike,
  values: readonly RepValue[],
  alpha: number,
  min_effect: number,
): CarryOver | null {
  const n = values.length;
  if (n < 3) return null;
  const sequence = new Map(plan.blocks.map((b) => [b.index, b.sequence]));
  const cell = values.map((v) => {
    const after = v.position > 0 ? sequence.get(v.block)?.[v.position - 1] : undefined;
    return after === undefined ? null : { arm: v.arm, after };
  });
  const y = values.map((v) => Math.log(v.value));
  const blockAndArm = leastSquaresOn(
    [values.map(() => 1), ...dummies(values.map((v) => v.block)), ...dummies(values.map((v) => v.arm))],
    n,
  );
  // y = block + arm + carry(arm, predecessor) + e, by turns: block + arm on y − carry, then each
  // cell's carry as its mean residual over its arm's baseline (Gauss–Seidel on the normal equations)
  let carry: number[] = values.map(() => 0);
  let res: number[] = [];
  let rss = 0;
  let rank = 0;
  for (let round = 0; round < BACKFIT_ROUNDS; round++) {
    const fit = blockAndArm(y.map((x, i) => x - carry[i]!));
    res = fit.residuals.map((r, i) => r + carry[i]!);
    rss = fit.rss;
    rank = fit.rank;
    const byArm = cellsOf(res, cell);
    const next = cell.map((k) => {
      if (k === null) return 0;
      const cells = byArm.get(k.arm)!;
      const self = cells.get(k.arm);
      const base = self !== undefined && self.n >= 2 ? meanOf(self) : meanOf([...cells.values()].reduce(join, NONE));
      return meanOf(cells.get(k.after)!) - base;
    });
    const moved = Math.max(0, ...next.map((c, i) => Math.abs(c - carry[i]!)));
    carry = next;
    if (moved < BACKFIT_TOLERANCE) break;
  }
  const byArm = cellsOf(res, cell);
  const estimated = [...byArm.values()].reduce((s, m) => s + m.size, 0);
  const df = n - rank - estimated;
  const s = df > 0 ? Math.sqrt(rss / df) : null;
  const cells: CarryOverCell[] = [];
  for (const [arm, byBefore] of byArm) {
    for (const [after, c] of byBefore) {
      const { base, against } = baselineOf(arm, byBefore, after);
      if (against === `${arm} after itself` && after === arm) continue;
      cells.push({ arm, after, n: c.n, against, ...contrast(c, base, s, df) });
    }
  }
  const tested = cells.filter((c) => c.p !== null).length;
  for (const c of cells) c.flagged = large(c, alpha, tested, min_effect);
  const order = plan.arms.map((a) => a.name);
  cells.sort((a, b) => order.indexOf(a.arm) - order.indexOf(b.arm) || order.indexOf(a.after) - order.indexOf(b.after));
  return { cells, flagged: cells.some((c) => c.flagged), message: message(cells, tested, alpha, min_effect) };
}

function contrast(
  c: Rest,
  base: Rest,
  s: number | null,
  df: number,
): Pick<CarryOverCell, 'effect' | 'median_effect' | 'p' | 'flagged'> {
  if (base.n === 0) return { effect: null, median_effect: null, p: null, flagged: false };
  const diff = meanOf(c) - meanOf(base);
  const se = s === null ? null : s * Math.sqrt(1 / c.n + 1 / base.n);
  return {
    effect: Math.expm1(diff),
    median_effect: Math.expm1(median(c.xs) - meanOf(base)),
    p: se === null || se === 0 ? null : studentTwoSidedP(diff / se, df),
    flagged: false,
  };
}

/** Large: past Bonferroni, and the cell's mean and its median rep both beyond min_effect on one side (one bad rep is not a carry-over). */
function large(c: CarryOverCell, alpha: number, tested: number, min_effect: number): boolean {
  if (c.p === null || c.effect === null || c.median_effect === null || c.p >= alpha / tested) return false;
  return (
    Math.abs(c.effect) >= min_effect &&
    Math.abs(c.median_effect) >= min_effect &&
    Math.sign(c.effect) === Math.sign(c.median_effect)
  );
}

function message(cells: readonly CarryOverCell[], tested: number, alpha: number, min_effect: number): string {
  const rule = `an arm after one predecessor against the same arm after itself, or after the others where it never followed itself; flagged at p < ${alpha} / ${tested} cells with the mean and the median rep of the cell both beyond ${pct(min_effect)}`;
  const flagged = cells.filter((c) => c.flagged);
  if (tested === 0)
    return `carry-over not testable: no arm ran after two different predecessors with a residual to test against (${rule})`;
  if (flagged.length === 0) {
    const largest = cells.reduce<CarryOverCell | null>(
      (m, c) => (c.effect !== null && (m === null || Math.abs(c.effect) > Math.abs(m.effect!)) ? c : m),
      null,
    );
    return `no large carry-over: largest ${largest === null ? '—' : `${largest.arm} after ${largest.after} ${signedPct(largest.effect)} (${pClause(largest.p)})`} (${rule})`;
  }
  const each = flagged.map((c) => `${c.arm} after ${c.after} ${signedPct(c.effect)} (${pClause(c.p)}, ${c.n} reps)`);
  return `carry-over flagged: ${each.join('; ')} — the arm measures differently after that arm than after the others, which a balanced order does not cancel; settle the state between reps or report the arm after its own predecessor only (${rule})`;
}
