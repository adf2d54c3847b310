/**
 * Ordinary least squares by modified Gram–Schmidt, enough for the factor models of the order
 * and drift checks: residual sum of squares, rank (collinear columns are dropped, as a design
 * with one dummy per level of several factors always has some) and residuals.
 */

export interface LeastSquares {
  rss: number;
  rank: number;
  residuals: number[];
}

const TOLERANCE = 1e-9;

export function leastSquares(y: readonly number[], columns: readonly (readonly number[])[]): LeastSquares {
  const basis: number[][] = [];
  for (const col of columns) {
    const v = [...col];
    const norm0 = Math.hypot(...v);
    if (norm0 === 0) continue;
    for (let pass = 0; pass < 2; pass++) {
      for (const q of basis) {
        const dot = q.reduce((s, qi, i) => s + qi * v[i]!, 0);
        for (let i = 0; i < v.length; i++) v[i]! -= dot * q[i]!;
      }
    }
    const norm = Math.hypot(...v);
    if (norm <= TOLERANCE * norm0) continue;
    basis.push(v.map((x) => x / norm));
  }
  const residuals = [...y];
  for (const q of basis) {
    const dot = q.reduce((s, qi, i) => s + qi * residuals[i]!, 0);
    for (let i = 0; i < residuals.length; i++) residuals[i]! -= dot * q[i]!;
  }
  return { rss: residuals.reduce((s, r) => s + r * r, 0), rank: basis.length, residuals };
}

/** One indicator column per distinct level of `levels` (the caller adds an intercept or not). */
export function dummies(levels: readonly (string | number)[]): number[][] {
  const distinct = [...new Set(levels)];
  return distinct.map((l) => levels.map((x) => (x === l ? 1 : 0)));
}

/** F test of a bigger nested model against a smaller one; null where it has no degrees of freedom. */
export function nestedF(
  small: LeastSquares,
  big: LeastSquares,
  n: number,
): { F: number | null; df1: number; df2: number } {
  const df1 = big.rank - small.rank;
  const df2 = n - big.rank;
  if (df1 <= 0 || df2 <= 0 || big.rss <= 0) return { F: null, df1, df2 };
  return { F: (small.rss - big.rss) / df1 / (big.rss / df2), df1, df2 };
}
