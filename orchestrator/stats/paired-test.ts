/**
 * Tests on paired differences: Student's t with a CI on the mean difference, and Wilcoxon's
 * signed-rank test as the robustness check (it does not assume normal differences). The unit is
 * one difference per pair; pairing is done by pairing.ts.
 */
import wilcoxon from '@stdlib/stats-wilcoxon';
import { mean, sampleSd } from './descriptive.ts';
import { studentQuantile, studentTwoSidedP } from './distributions.ts';
import type { PairedTest, WilcoxonResult } from './types.ts';

/** One-sample t on the differences `d` against 0, two-sided, CI at 1 − alpha. */
export function pairedT(d: readonly number[], alpha: number): PairedTest {
  const n = d.length;
  if (n < 2) {
    return { n, df: null, mean: n === 1 ? d[0]! : null, sd: null, se: null, t: null, p: null, ci: null };
  }
  const m = mean(d);
  const sd = sampleSd(d);
  const se = sd / Math.sqrt(n);
  const df = n - 1;
  const q = studentQuantile(1 - alpha / 2, df);
  const ci: [number, number] = [m - q * se, m + q * se];
  if (se === 0) {
    // Every difference identical: a constant shift is certain, no shift at all is no evidence.
    return { n, df, mean: m, sd, se, t: null, p: m === 0 ? 1 : 0, ci };
  }
  const t = m / se;
  return { n, df, mean: m, sd, se, t, p: studentTwoSidedP(t, df), ci };
}

/**
 * Wilcoxon signed-rank via @stdlib, two-sided, zeros dropped (R's default too): exact distribution
 * for at most 50 differences without ties or zeros, else the normal approximation with
 * continuity and tie corrections.
 */
export function wilcoxonSignedRank(d: readonly number[]): WilcoxonResult {
  if (d.length < 2) return { w_plus: null, p: null, method: null };
  if (d.every((x) => x === 0)) return { w_plus: 0, p: 1, method: 'exact' };
  const r = wilcoxon(Float64Array.from(d));
  return { w_plus: r.statistic, p: Math.min(1, r.pValue), method: exactApplies(d) ? 'exact' : 'normal' };
}

function exactApplies(d: readonly number[]): boolean {
  const nz = d.filter((x) => x !== 0);
  return nz.length === d.length && nz.length <= 50 && new Set(nz.map(Math.abs)).size === nz.length;
}
