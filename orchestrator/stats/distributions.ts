/**
 * The distribution functions the statistics use, all from @stdlib (a well-kept library): no
 * quantile or CDF is written here. Thin typed wrappers so the rest reads like the formulas.
 */
import fCdf from '@stdlib/stats-base-dists-f-cdf';
import tCdf from '@stdlib/stats-base-dists-t-cdf';
import tQuantile from '@stdlib/stats-base-dists-t-quantile';

/** The p-quantile of Student's t with `df` degrees of freedom. */
export function studentQuantile(p: number, df: number): number {
  return tQuantile(p, df);
}

/** P(T ≤ t) for Student's t with `df` degrees of freedom. */
export function studentCdf(t: number, df: number): number {
  return tCdf(t, df);
}

/** Two-sided p-value of a t statistic. */
export function studentTwoSidedP(t: number, df: number): number {
  return Math.min(1, 2 * tCdf(-Math.abs(t), df));
}

/** Upper-tail p-value of an F statistic. */
export function fisherUpperP(F: number, df1: number, df2: number): number {
  return Math.max(0, 1 - fCdf(F, df1, df2));
}
