/**
 * Welch's unequal-variance t test on two independent samples (here: block means of one arm in
 * two experiments), with the Welch–Satterthwaite degrees of freedom. Null where a sample has
 * fewer than two values or no spread on either side.
 */
import { mean, sampleSd } from './descriptive.ts';
import { studentQuantile, studentTwoSidedP } from './distributions.ts';

export interface WelchTest {
  n: [number, number];
  /** mean(b) − mean(a) */
  diff: number | null;
  se: number | null;
  df: number | null;
  t: number | null;
  p: number | null;
  ci: [number, number] | null;
}

export function welchT(a: readonly number[], b: readonly number[], alpha: number): WelchTest {
  const none: WelchTest = { n: [a.length, b.length], diff: null, se: null, df: null, t: null, p: null, ci: null };
  if (a.length < 2 || b.length < 2) return { ...none, diff: a.length > 0 && b.length > 0 ? mean(b) - mean(a) : null };
  const va = sampleSd(a) ** 2 / a.length;
  const vb = sampleSd(b) ** 2 / b.length;
  const diff = mean(b) - mean(a);
  const se = Math.sqrt(va + vb);
  if (!(se > 0)) return { ...none, diff };
  const df = (va + vb) ** 2 / (va ** 2 / (a.length - 1) + vb ** 2 / (b.length - 1));
  const q = studentQuantile(1 - alpha / 2, df);
  const t = diff / se;
  return { n: [a.length, b.length], diff, se, df, t, p: studentTwoSidedP(t, df), ci: [diff - q * se, diff + q * se] };
}

/** The paired t interval's half-width on per-unit differences (for the paired-vs-unpaired ratio). */
export function pairedHalfWidth(d: readonly number[], alpha: number): number | null {
  if (d.length < 2) return null;
  const se = sampleSd(d) / Math.sqrt(d.length);
  return se > 0 ? studentQuantile(1 - alpha / 2, d.length - 1) * se : null;
}
