/**
 * Seeded simulated experiments for the statistics' tests: a plan with a balanced order (ABBA
 * alternating with BAAB across blocks for two arms, Williams rows for more), and rep results
 * drawn from a log-scale model with every nuisance the real cards have:
 *
 *   ln(step) = ln(mu_arm) + block_b + drift · position + order[position] + eps_rep + eps_step
 *
 * block_b ~ N(0, blockSd), eps_rep ~ N(0, sigma), eps_step ~ N(0, stepSigma). The truth a test
 * checks against is computed from the planted `mu`s, never written by hand.
 */
import type { AnalysisInput, PlanArm, PlanLike, RepResult } from '../../orchestrator/stats/types.ts';

export type Rng = () => number;

/** mulberry32: a small, well-known seeded uniform generator on [0, 1). */
export function seeded(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal by Box–Muller. */
export function gaussian(rng: Rng): number {
  let u = 0;
  while (u === 0) u = rng();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng());
}

function williamsRows(n: number): number[][] {
  const first: number[] = [0];
  for (let i = 1, lo = 1, hi = n - 1; i < n; i++) first.push(i % 2 === 1 ? lo++ : hi--);
  const rows = Array.from({ length: n }, (_, r) => first.map((x) => (x + r) % n));
  return n % 2 === 0 ? rows : [...rows, ...rows.map((r) => [...r].reverse())];
}

/** The run order of one block: each arm `reps` times. */
export function balancedSequence(arms: readonly string[], reps: number, block: number): string[] {
  if (arms.length === 2) {
    const out: string[] = [];
    for (let r = 0; r < reps; r++) {
      const flip = (r + block) % 2 === 1;
      out.push(...(flip ? [arms[1]!, arms[0]!] : [arms[0]!, arms[1]!]));
    }
    return out;
  }
  const rows = williamsRows(arms.length);
  const out: string[] = [];
  for (let r = 0; r < reps; r++) out.push(...rows[(block * reps + r) % rows.length]!.map((i) => arms[i]!));
  return out;
}

export interface SimArm extends PlanArm {
  /** True mean step time of the arm. */
  mu: number;
}

export interface SimParams {
  design: PlanLike['design'];
  arms: SimArm[];
  control: string;
  toggles?: string[];
  blocks: number;
  reps: number;
  /** Rep-to-rep log sd. */
  sigma: number;
  blockSd: number;
  /** Log change per position in a block. */
  drift: number;
  /** Log offset of the first position of every block (a cold start). */
  firstPosition: number;
  /** Extra log offset of an arm when it runs first (a cold start that hits one arm only). */
  firstPositionByArm?: Record<string, number>;
  steps?: number;
  stepSigma?: number;
}

export function simulatePlan(p: SimParams): PlanLike {
  const names = p.arms.map((a) => a.name);
  return {
    hash: 'sim',
    name: 'sim',
    design: p.design,
    toggles: p.toggles ?? [],
    control: p.control,
    arms: p.arms.map(({ mu: _mu, ...arm }) => arm),
    blocks: Array.from({ length: p.blocks }, (_, index) => ({ index, sequence: balancedSequence(names, p.reps, index) })),
    reps: p.reps,
  };
}

export function simulateReps(p: SimParams, plan: PlanLike, rng: Rng): RepResult[] {
  const mu = new Map(p.arms.map((a) => [a.name, a.mu]));
  const steps = p.steps ?? 5;
  const stepSigma = p.stepSigma ?? 0.002;
  const out: RepResult[] = [];
  for (const b of plan.blocks) {
    const blockEffect = p.blockSd * gaussian(rng);
    const seen = new Map<string, number>();
    b.sequence.forEach((arm, position) => {
      const rep = seen.get(arm) ?? 0;
      seen.set(arm, rep + 1);
      const level =
        Math.log(mu.get(arm)!) + blockEffect + p.drift * position + (position === 0 ? p.firstPosition + (p.firstPositionByArm?.[arm] ?? 0) : 0) + p.sigma * gaussian(rng);
      const step_ms = Array.from({ length: steps }, () => Math.exp(level + stepSigma * gaussian(rng)));
      out.push({ experiment: 'sim', block: b.index, attempt: 1, epoch: 1, arm, rep, position, step_ms, backend: 'cpu', mode: 'graph' });
    });
  }
  return out;
}

export function simulateExperiment(p: SimParams, rng: Rng, extra: Partial<AnalysisInput> = {}): AnalysisInput {
  const plan = simulatePlan(p);
  return {
    plan,
    reps: simulateReps(p, plan, rng),
    failed: [],
    gates: [],
    metric: { name: 'ms_per_step', better: 'lower', statistic: 'median' },
    min_effect: 0,
    alpha: 0.05,
    ...extra,
  };
}
