/** Descriptive statistics of one sample (types.ts `Descriptive`): nulls, never NaN. */
import { studentQuantile } from './distributions.ts';
import type { Descriptive } from './types.ts';

export function mean(xs: readonly number[]): number {
  let s = 0;
  for (const x of xs) s += x;
  return s / xs.length;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Sample standard deviation (n − 1 denominator); callers guarantee n ≥ 2. */
export function sampleSd(xs: readonly number[]): number {
  const m = mean(xs);
  let ss = 0;
  for (const x of xs) ss += (x - m) ** 2;
  return Math.sqrt(ss / (xs.length - 1));
}

export function describe(xs: readonly number[], alpha: number): Descriptive {
  const n = xs.length;
  if (n === 0) {
    return { n, mean: null, median: null, sd: null, sem: null, ci: null, min: null, max: null, cv: null };
  }
  const m = mean(xs);
  const base = { n, mean: m, median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
  if (n < 2) return { ...base, sd: null, sem: null, ci: null, cv: null };
  const sd = sampleSd(xs);
  const sem = sd / Math.sqrt(n);
  const q = studentQuantile(1 - alpha / 2, n - 1);
  return { ...base, sd, sem, ci: [m - q * sem, m + q * sem], cv: m === 0 ? null : sd / m };
}
