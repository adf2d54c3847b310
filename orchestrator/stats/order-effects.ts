/**
 * Order effects and drift, on log values with block and arm effects removed.
 *
 * Models (factors as dummies): M0 = block + arm; M1 = M0 + position; M2 = M1 + arm × position.
 * M1 vs M0 tests whether a position in the block is faster or slower for every arm (warm caches,
 * clocks); M2 vs M1 whether the position effect differs by arm (carry-over), which a balanced
 * order does not cancel. Effects are mean residuals of M0, shown as relative deviations.
 * Drift: per arm, the slope over run position in block + arm + per-arm slopes (log-linear, so a
 * relative change per position), with its t test on the model's residual degrees of freedom.
 */
import { fisherUpperP, studentTwoSidedP } from './distributions.ts';
import { pClause, pct } from './format-number.ts';
import { dummies, leastSquares, nestedF } from './linear-model.ts';
import type { DriftRow, OrderEffects, RepValue } from './types.ts';

function meanBy<K>(keys: readonly K[], r: readonly number[]): Map<K, { sum: number; n: number }> {
  const acc = new Map<K, { sum: number; n: number }>();
  keys.forEach((k, i) => {
    const a = acc.get(k) ?? { sum: 0, n: 0 };
    a.sum += r[i]!;
    a.n += 1;
    acc.set(k, a);
  });
  return acc;
}

function test(F: { F: number | null; df1: number; df2: number }) {
  return { ...F, p: F.F === null ? null : fisherUpperP(F.F, F.df1, F.df2) };
}

export interface OrderAndDrift {
  order: OrderEffects | null;
  drift: DriftRow[];
}

export function orderAndDrift(values: readonly RepValue[], alpha: number, min_effect: number): OrderAndDrift {
  const n = values.length;
  const arms = [...new Set(values.map((v) => v.arm))];
  if (n < 3 || arms.length < 1) return { order: null, drift: [] };
  const y = values.map((v) => Math.log(v.value));
  const one = values.map(() => 1);
  const blockCols = dummies(values.map((v) => v.block));
  const armCols = dummies(values.map((v) => v.arm));
  const posCols = dummies(values.map((v) => v.position));
  const cellCols = dummies(values.map((v) => `${v.arm}@${v.position}`));
  const m0 = leastSquares(y, [one, ...blockCols, ...armCols]);
  const m1 = leastSquares(y, [one, ...blockCols, ...armCols, ...posCols]);
  const position_test = test(nestedF(m0, m1, n));
  // The interaction needs about two reps per arm × position cell to have a residual to test
  // against (and the fit costs cells² · n); below that it is reported as not testable.
  const testable = 2 * cellCols.length + blockCols.length <= n;
  const interaction_test = testable
    ? test(nestedF(m1, leastSquares(y, [one, ...blockCols, ...armCols, ...posCols, ...cellCols]), n))
    : { F: null, df1: cellCols.length, df2: 0, p: null };

  const byPos = meanBy(
    values.map((v) => v.position),
    m0.residuals,
  );
  const by_position = [...byPos.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([position, a]) => ({ position, effect: Math.expm1(a.sum / a.n), n: a.n }));
  const byCell = meanBy(
    values.map((v) => `${v.arm}@${v.position}`),
    m0.residuals,
  );
  const by_arm_position = [...byCell.entries()]
    .map(([key, a]) => {
      const at = key.lastIndexOf('@');
      return { arm: key.slice(0, at), position: Number(key.slice(at + 1)), effect: Math.expm1(a.sum / a.n), n: a.n };
    })
    .sort((a, b) => (a.arm === b.arm ? a.position - b.position : arms.indexOf(a.arm) - arms.indexOf(b.arm)));

  const largestPos = Math.max(0, ...by_position.map((p) => Math.abs(p.effect)));
  const posFlag = position_test.p !== null && position_test.p < alpha && largestPos >= min_effect / 2;
  const intFlag = interaction_test.p !== null && interaction_test.p < alpha;
  const parts = [
    `position effect up to ${pct(largestPos)} (F test ${pClause(position_test.p)})`,
    testable
      ? `arm × position ${pClause(interaction_test.p)}`
      : 'arm × position not testable (fewer than two reps per arm × position cell; more blocks make it testable)',
  ];
  const message =
    posFlag || intFlag
      ? `order effects flagged: ${parts.join('; ')} — a balanced order cancels a position effect shared by all arms, not one that differs by arm`
      : `no large order effect: ${parts.join('; ')}`;
  const order: OrderEffects = {
    by_position,
    by_arm_position,
    position_test,
    interaction_test,
    flagged: posFlag || intFlag,
    message,
  };
  const base = [one, ...blockCols, ...armCols];
  return { order, drift: arms.map((arm) => driftOf(arm, y, values, base, alpha)) };
}

/**
 * The drift slope of `arm` in y ~ block + arm + (one position slope per arm), by Frisch–Waugh:
 * y and the arm's position column are both residualized on every other column, so the slope,
 * its se and the residual degrees of freedom are those of the full least-squares fit.
 */
function driftOf(
  arm: string,
  y: readonly number[],
  values: readonly RepValue[],
  base: readonly number[][],
  alpha: number,
): DriftRow {
  const none: DriftRow = { arm, slope: null, se: null, t: null, p: null, df: null, flagged: false };
  const arms = [...new Set(values.map((v) => v.arm))];
  const slopeCol = (a: string) => values.map((v) => (v.arm === a ? v.position : 0));
  const others = [...base, ...arms.filter((a) => a !== arm).map(slopeCol)];
  const ry = leastSquares(y, others);
  const rx = leastSquares(slopeCol(arm), others);
  const full = leastSquares(y, [...others, slopeCol(arm)]);
  const df = values.length - full.rank;
  if (rx.rss <= 1e-12 || full.rank === ry.rank || df <= 0) return none;
  let sxy = 0;
  for (let i = 0; i < y.length; i++) sxy += rx.residuals[i]! * ry.residuals[i]!;
  const b = sxy / rx.rss;
  const se = Math.sqrt(full.rss / df / rx.rss);
  const slope = Math.expm1(b);
  if (se === 0) return { arm, slope, se: 0, t: null, p: null, df, flagged: false };
  const t = b / se;
  const p = studentTwoSidedP(t, df);
  return { arm, slope, se, t, p, df, flagged: p < alpha };
}
