/**
 * The looks' boundaries on the t scale: critical values c_k for the paired t statistics
 * T_k = mean / se at each look, such that under the null the probability of crossing first at look
 * k is what the Lan–DeMets O'Brien–Fleming-type function spends there (sequential.ts
 * obrienFlemingSpent), for the looks' own pair counts n_k (df n_k − 1).
 *
 * Why not the z boundaries carried to t at each look's df (Jennison & Turnbull 2000, §11.4, the
 * "significance level approach", which this replaced): that keeps each look's marginal tail but
 * not the looks' joint one, because the looks share their variance estimate. For five equal looks
 * of 8 pairs it gave a type-I of 5.13 % (1 000 000 null paths, se 0.02) where the known-variance
 * z test gives 5.02 %. These are the exact sequential t-test boundaries of Jennison & Turnbull
 * (1991, "Exact calculations for sequential t, χ² and F tests", Biometrika 78:133–141), found here
 * by a seeded Monte Carlo of the sufficient statistics instead of their numerical integration:
 *
 *   - the t statistics are scale free, so null paths have σ = 1; each path carries the sum S and
 *     the residual sum of squares R of its pairs. m new pairs add ΔS ~ N(0, m) and
 *     R' = R + χ²(m − 1) + (S/n − ΔS/m)² · n·m/(n + m) (the within-group and between-group sums of
 *     squares), so a look costs two draws per path whatever its pair count;
 *   - look 1's boundary is the exact t quantile of its spend; at each later look c_k is set so that
 *     the paths still running and with |T_k| ≥ c_k are, as a share of all paths, the spend at k
 *     plus whatever the looks before did not spend;
 *   - the draws are made look by look over all paths, so c_k depends on the looks up to k only:
 *     the scheduler, deciding at look k, and the report, replaying every look, get the same c_k.
 *
 * PATHS paths give the total type-I to ± 0.05 points (one simulation se at alpha 0.05).
 */
import { mulberry32, standardNormal } from '../../jobs/seeded-random.ts';
import { studentQuantile } from './distributions.ts';
import { obrienFlemingSpent } from './sequential.ts';

/** Null paths simulated: the type-I error to one se of √(0.05 · 0.95 / PATHS) ≈ 0.0005. */
export const PATHS = 200_000;
/** One seed for every computation: the same looks always get the same boundaries. */
const SEED = 0x5e9_7b0d;

export interface TLook {
  /** usable pairs at the look */
  pairs: number;
  /** information fraction at the look, (0, 1] */
  fraction: number;
}

/** Look schedules remembered; a long-lived scheduler sees many experiments, so the oldest go. */
const MEMO_LIMIT = 64;
const memo = new Map<string, number[]>();

/**
 * Two-sided t critical values, one per look (Infinity where a look has under 2 pairs or spends
 * nothing). Looks must increase in pairs and in fraction. Memoised: an experiment's looks are
 * asked for again at every block end.
 */
export function tBoundaries(looks: readonly TLook[], alpha: number): number[] {
  const key = `${alpha}|${looks.map((l) => `${l.pairs}:${l.fraction}`).join(',')}`;
  const hit = memo.get(key);
  if (hit) return hit;
  for (let k = 0; k < looks.length; k++) {
    const l = looks[k]!;
    const prev = looks[k - 1];
    if (
      !(l.fraction > (prev?.fraction ?? 0)) ||
      l.fraction > 1 + 1e-12 ||
      !Number.isInteger(l.pairs) ||
      l.pairs < (prev?.pairs ?? 0)
    ) {
      throw new Error(
        `looks must increase in pairs and in information fraction within (0, 1]: ${looks.map((x) => `${x.pairs} pairs at ${x.fraction}`).join(', ')}`,
      );
    }
  }
  const out = simulateBoundaries(looks, alpha);
  memo.set(key, out);
  if (memo.size > MEMO_LIMIT) memo.delete(memo.keys().next().value!);
  return out;
}

function simulateBoundaries(looks: readonly TLook[], alpha: number): number[] {
  const rand = mulberry32(SEED);
  const sum = new Float64Array(PATHS);
  const rss = new Float64Array(PATHS);
  const running = new Uint8Array(PATHS).fill(1);
  const abs = new Float64Array(PATHS);
  let n = 0;
  let crossed = 0;
  const bounds: number[] = [];
  for (const look of looks) {
    const m = look.pairs - n;
    for (let p = 0; p < PATHS && m > 0; p++) {
      const dS = Math.sqrt(m) * standardNormal(rand);
      const within = m > 1 ? 2 * gamma((m - 1) / 2, rand) : 0;
      rss[p] = n === 0 ? within : rss[p]! + within + ((sum[p]! / n - dS / m) ** 2 * n * m) / (n + m);
      sum[p] = sum[p]! + dS;
    }
    n = look.pairs;
    const spent = obrienFlemingSpent(look.fraction, alpha);
    const target = Math.round(spent * PATHS) - crossed;
    let c: number;
    if (n < 2) c = Infinity;
    else if (bounds.every((b) => b === Infinity)) {
      // no look before could stop: this look's own t quantile is exact, no simulation needed
      c = studentQuantile(1 - spent / 2, n - 1);
    } else if (target <= 0) c = Infinity;
    else {
      let live = 0;
      for (let p = 0; p < PATHS; p++) if (running[p]) abs[live++] = Math.abs(tStat(sum[p]!, rss[p]!, n));
      const sorted = abs.subarray(0, live).sort();
      // the target-th largest |T| among the paths still running, halfway to the next one down
      c = target >= live ? 0 : (sorted[live - target]! + sorted[live - target - 1]!) / 2;
    }
    for (let p = 0; p < PATHS; p++) {
      if (running[p] && Math.abs(tStat(sum[p]!, rss[p]!, n)) >= c) {
        running[p] = 0;
        crossed++;
      }
    }
    bounds.push(c);
  }
  return bounds;
}

function tStat(sum: number, rss: number, n: number): number {
  return sum / n / Math.sqrt(rss / (n - 1) / n);
}

/**
 * Gamma(shape, 1) by Marsaglia & Tsang (2000, ACM TOMS 26:363), with the shape < 1 case through
 * Gamma(shape + 1) · U^(1/shape).
 */
function gamma(shape: number, rand: () => number): number {
  if (shape < 1) return gamma(shape + 1, rand) * (1 - rand()) ** (1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = standardNormal(rand);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = 1 - rand();
    if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
  }
}
