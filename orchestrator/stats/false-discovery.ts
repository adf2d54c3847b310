/**
 * Benjamini–Hochberg: of m tests, the ones rejected while keeping the expected share of false
 * rejections at most q. A night of a nightly suite makes many comparisons at once (every arm of
 * every spec); alone, each at alpha 0.05, 200 null comparisons give about 10 false "slower"s a
 * night. Sorted p ascending, the largest k with p_(k) ≤ k·q/m rejects the k smallest.
 */
export function benjaminiHochberg(ps: readonly (number | null)[], q: number): boolean[] {
  const tested = ps
    .map((p, i) => ({ p, i }))
    .filter((x): x is { p: number; i: number } => x.p !== null && Number.isFinite(x.p));
  const m = tested.length;
  const sorted = [...tested].sort((a, b) => a.p - b.p);
  let k = 0;
  sorted.forEach((x, j) => {
    if (x.p <= ((j + 1) * q) / m) k = j + 1;
  });
  const out = ps.map(() => false);
  for (const x of sorted.slice(0, k)) out[x.i] = true;
  return out;
}
