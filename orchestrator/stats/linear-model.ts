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

function dot(a: Float64Array, b: Float64Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

/** v ← v − (q·v) q */
function removeComponent(v: Float64Array, q: Float64Array): void {
  const d = dot(q, v);
  for (let i = 0; i < v.length; i++) v[i]! -= d * q[i]!;
}

export function leastSquares(y: readonly number[], columns: readonly (readonly number[])[]): LeastSquares {
  return leastSquaresOn(columns, y.length)(y);
}

/**
 * The fit of any y of length n on `columns`, the columns orthonormalized once: for a loop that
 * refits the same design to a changing y (carry-over.ts fits block + arm by turns).
 */
export function leastSquaresOn(
  columns: readonly (readonly number[])[],
  n: number,
): (y: readonly number[]) => LeastSquares {
  const basis: Float64Array[] = [];
  for (const col of columns) {
    if (basis.length === n) break; // the basis spans everything: the rest is dependent
    const v = Float64Array.from(col);
    const norm0 = Math.sqrt(dot(v, v));
    if (norm0 === 0) continue;
    // Twice is enough (Kahan–Parlett): one more pass restores orthogonality lost to rounding.
    for (let pass = 0; pass < 2; pass++) for (const q of basis) removeComponent(v, q);
    const norm = Math.sqrt(dot(v, v));
    if (norm <= TOLERANCE * norm0) continue;
    for (let i = 0; i < v.length; i++) v[i]! /= norm;
    basis.push(v);
  }
  return (y) => {
    const r = Float64Array.from(y);
    for (const q of basis) removeComponent(r, q);
    return { rss: dot(r, r), rank: basis.length, residuals: Array.from(r) };
  };
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
