/**
 * Sequential stopping with error control (spec `stopping: { rule: sequential }`): looks at the
 * primary comparison at block boundaries, each against a boundary that keeps the two-sided type-I
 * error at alpha over all looks, and a decision per look — faster, slower, equivalent, or go on.
 *
 * Boundaries: Lan–DeMets alpha spending with the O'Brien–Fleming-type function (obrienFlemingSpent),
 * t the information fraction (pairs now / pairs at the budget), so
 * unplanned or unequal looks keep the error rate: look k spends α(t_k) − α(t_{k−1}), and its
 * boundary c_k is found by propagating the null density of the score statistic S = Z·√t over the
 * continuation region of the looks before (Armitage–McPherson–Rowe recursion, a grid in S).
 * Peeking at the fixed-design 95 % CI after every block instead inflates type-I to 13–18 %.
 *
 * The looks' statistic is the paired t on ln(arm / reference), as compare.ts uses. sequentialBoundaries
 * below are the design's boundaries on the z scale (known variance; `orch plan` shows them); the looks
 * decide on the t scale with t-boundaries.ts, which spends the same function over the t statistics'
 * joint null distribution at the looks' own pair counts. With the critical value c the
 * repeated confidence interval mean ± c·se (Jennison & Turnbull) decides: wholly beyond
 * ±min_effect → faster or slower; wholly inside → equivalent; else the experiment goes on, and at
 * the budget's last look it is inconclusive. Stopping for equivalence on repeated CIs keeps their
 * simultaneous coverage, so both kinds of stop are under the same alpha.
 */
import { studentCdf, studentQuantile } from './distributions.ts';

/** Φ and Φ⁻¹ through Student's t at a df where it is the normal to 1e-9 (stdlib has no normal here). */
const NORMAL_DF = 1e8;
const phi = (z: number): number => studentCdf(z, NORMAL_DF);
const phiInv = (p: number): number => studentQuantile(p, NORMAL_DF);
const density = (x: number, variance: number): number =>
  Math.exp((-x * x) / (2 * variance)) / Math.sqrt(2 * Math.PI * variance);

/**
 * Lan–DeMets O'Brien–Fleming-type spending, two-sided and symmetric: each side spends
 * 2 − 2Φ(z_{1−α/4} / √t) of its α/2 by information fraction t ∈ (0, 1] (gsDesign's sfLDOF and
 * ldbounds' OBF on each side), so the total spent is twice that. Five equal looks at α = 0.05:
 * 4.877, 3.357, 2.680, 2.290, 2.031 — the classical O'Brien–Fleming 4.56 … 2.04 up to the shape.
 */
export function obrienFlemingSpent(t: number, alpha: number): number {
  if (t <= 0) return 0;
  return Math.min(alpha, 2 * (2 - 2 * phi(phiInv(1 - alpha / 4) / Math.sqrt(Math.min(1, t)))));
}

/** Grid points per unit of S's standard deviation: boundaries to about 1e-3 in z. */
const GRID_PER_SD = 40;

/**
 * Two-sided z boundaries for looks at increasing information fractions `fractions` (the last may
 * be 1, the budget), each spending what the O'Brien–Fleming-type function says. Deterministic.
 */
export function sequentialBoundaries(fractions: readonly number[], alpha: number): number[] {
  const bounds: number[] = [];
  // the sub-density of S at the previous look over its continuation region, on a grid
  let grid: number[] = [];
  let dens: number[] = [];
  let prevT = 0;
  let spentBefore = 0;
  for (const t of fractions) {
    if (!(t > prevT) || t > 1 + 1e-12)
      throw new Error(`information fractions must increase within (0, 1]: ${fractions.join(', ')}`);
    const target = obrienFlemingSpent(t, alpha) - spentBefore;
    const dt = t - prevT;
    // the density of S_t restricted to "not stopped before", as a function of s
    const at = (s: number): number =>
      grid.length === 0 ? density(s, t) : integrate(grid, dens, (u) => density(s - u, dt));
    // P(|S_t| ≥ c√t, not stopped before) for a boundary c on the z scale
    const sd = Math.sqrt(t);
    const tail = (c: number): number => {
      if (grid.length === 0) return 2 * (1 - phi(c));
      const hi = c * sd + 8 * sd;
      const pts = Math.max(200, Math.ceil((hi - c * sd) / sd) * GRID_PER_SD);
      const step = (hi - c * sd) / pts;
      let sum = 0;
      for (let i = 0; i <= pts; i++) sum += (i === 0 || i === pts ? 0.5 : 1) * at(c * sd + i * step);
      return 2 * sum * step;
    };
    const c = target <= 1e-15 ? Infinity : bisect((x) => tail(x) - target, 0.5, 12);
    bounds.push(c);
    // what this look spends, before the grid moves on (tail reads the previous look's grid)
    spentBefore += Number.isFinite(c) ? tail(c) : 0;
    // the continuation region's sub-density, for the next look
    const lim = Number.isFinite(c) ? c * sd : 8 * sd;
    const pts = Math.ceil((2 * lim) / sd) * GRID_PER_SD;
    const nextGrid = Array.from({ length: pts + 1 }, (_, i) => -lim + (2 * lim * i) / pts);
    dens = nextGrid.map(at);
    grid = nextGrid;
    prevT = t;
  }
  return bounds;
}

/** ∫ f(u)·g(u) du over the grid by the trapezoid rule, f sampled as `values`. */
function integrate(grid: readonly number[], values: readonly number[], g: (u: number) => number): number {
  let sum = 0;
  const h = (grid[grid.length - 1]! - grid[0]!) / (grid.length - 1);
  for (let i = 0; i < grid.length; i++) sum += (i === 0 || i === grid.length - 1 ? 0.5 : 1) * values[i]! * g(grid[i]!);
  return sum * h;
}

/** The root of a decreasing function on [lo, hi]. */
function bisect(f: (x: number) => number, lo: number, hi: number): number {
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (f(mid) > 0) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

export type LookDecision = 'faster' | 'slower' | 'equivalent' | 'continue' | 'inconclusive';

export interface LookInput {
  /** pairs of the primary comparison so far, and at the budget (all planned blocks) */
  pairs: number;
  maxPairs: number;
  /** mean and standard error of the paired ln(arm / reference), null below 2 pairs */
  mean: number | null;
  se: number | null;
  /** this look's two-sided critical value on the t scale (t-boundaries.ts), Infinity: no stop */
  critical: number;
  /** whether this is the budget's last look */
  last: boolean;
  better: 'lower' | 'higher';
  min_effect: number;
}

export interface Look {
  pairs: number;
  fraction: number;
  /**
   * the t critical value at df = pairs − 1, and the z with the same nominal tail, for reading;
   * both null where the look has no finite boundary (under 2 pairs, or it spends no alpha): it cannot stop
   */
  boundary: number | null;
  critical: number | null;
  estimate: number | null;
  /** the repeated CI on the relative change, exp(·) − 1; null unless both ends are finite */
  rci: [number, number] | null;
  decision: LookDecision;
}

/**
 * One look: the repeated CI at this look's boundary, and what it decides. A look without a finite
 * boundary, or whose repeated CI does not fit in a finite number (at 2 pairs the critical value is
 * about 590 700, and exp(mean + c·se) overflows), has no boundary or repeated CI to report (null:
 * report.json holds no Infinity) and cannot decide.
 */
export function decideLook(x: LookInput): Look {
  const fraction = x.pairs / x.maxPairs;
  const goOn: LookDecision = x.last ? 'inconclusive' : 'continue';
  const critical = x.pairs >= 2 && Number.isFinite(x.critical) ? x.critical : null;
  const base = {
    pairs: x.pairs,
    fraction,
    boundary: critical === null ? null : phiInv(studentCdf(critical, x.pairs - 1)),
    critical,
  };
  if (x.mean === null || x.se === null || x.pairs < 2) return { ...base, estimate: null, rci: null, decision: goOn };
  const estimate = Math.expm1(x.mean);
  const ends = critical === null ? null : [Math.expm1(x.mean - critical * x.se), Math.expm1(x.mean + critical * x.se)];
  if (ends === null || !ends.every(Number.isFinite)) return { ...base, estimate, rci: null, decision: goOn };
  const rci: [number, number] = [ends[0]!, ends[1]!];
  const below = rci[1] < -x.min_effect;
  const above = rci[0] > x.min_effect;
  let decision: LookDecision = goOn;
  if (below || above) decision = below === (x.better === 'lower') ? 'faster' : 'slower';
  else if (rci[0] > -x.min_effect && rci[1] < x.min_effect) decision = 'equivalent';
  return { ...base, estimate, rci, decision };
}

/** The block counts at which looks fall: `looks` looks spread evenly over `maxBlocks`, the last at the budget. */
export function lookSchedule(maxBlocks: number, looks: number): number[] {
  const at = new Set<number>();
  for (let j = 1; j <= looks; j++) at.add(Math.max(1, Math.ceil((j * maxBlocks) / looks)));
  return [...at].sort((a, b) => a - b);
}
