/**
 * Seeded simulated experiments for the statistics' tests: a plan ordered by the real planner
 * (jobs/plan.ts balancedBlocks: ABBA for two arms, Williams rows for more), and rep results
 * drawn from a log-scale model with every nuisance the real cards have:
 *
 *   ln(step) = ln(mu_arm) + block_b + drift · position + order[position] + eps_rep + eps_step
 *
 * block_b ~ N(0, blockSd), eps_rep ~ N(0, sigma) (or Student-t(3) of sd sigma with `noise: 't3'`,
 * the occasional bad rep of a shared box), eps_step ~ N(0, stepSigma); with `blockArmSd`
 * also an arm × block term arm_b ~ N(0, blockArmSd) per arm and block (a block on which the arms
 * differ by more or less: the part of block noise that pairing cannot remove). The truth a test
 * checks against is computed from the planted `mu`s, never written by hand.
 */
import { balancedBlocks } from '../../jobs/plan.ts';
import type { RepRef } from '../../jobs/rep-ref.ts';
import { mulberry32 } from '../../jobs/seeded-random.ts';
import type { AnalysisInput, PlanArm, PlanLike, RepResult } from '../../orchestrator/stats/types.ts';
import { t3 } from '../nightly/simulate-nights.ts';

export type Rng = () => number;

/** The project's seeded uniform generator (mulberry32), one stream per seed. */
export const seeded = (seed: number): Rng => mulberry32(seed);

/** Standard normal by Box–Muller. */
export function gaussian(rng: Rng): number {
  let u = 0;
  while (u === 0) u = rng();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng());
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
  /** Per arm and block log sd (arm × block interaction); default 0. */
  blockArmSd?: number;
  /** Log change per position in a block. */
  drift: number;
  /** Log offset of the first position of every block (a cold start). */
  firstPosition: number;
  /** Extra log offset of an arm when it runs first (a cold start that hits one arm only). */
  firstPositionByArm?: Record<string, number>;
  steps?: number;
  stepSigma?: number;
  /** Extra log offset of `arm` when it runs right after `after` in its block (carry-over). */
  carry?: { arm: string; after: string; log: number }[];
  /** The rep term's distribution; default normal. */
  noise?: 'normal' | 't3';
}

/**
 * A two-arm A/B: control A at `mu`, B at `mu · ratio`; no nuisance unless `rest` plants it.
 */
export function twoArms(ratio: number, rest: Partial<SimParams> = {}, mu = 40): SimParams {
  return {
    design: 'ab',
    control: 'A',
    arms: [
      { name: 'A', mu, toggles: {} },
      { name: 'B', mu: mu * ratio, toggles: {} },
    ],
    blocks: 4,
    reps: 3,
    sigma: 0.01,
    blockSd: 0.05,
    drift: 0,
    firstPosition: 0,
    ...rest,
  };
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
    blocks: balancedBlocks(names, p.reps, p.blocks),
    reps: p.reps,
  };
}

export function simulateReps(p: SimParams, plan: PlanLike, rng: Rng): RepResult[] {
  const mu = new Map(p.arms.map((a) => [a.name, a.mu]));
  const steps = p.steps ?? 5;
  const stepSigma = p.stepSigma ?? 0.002;
  const repNoise = p.noise === 't3' ? t3 : gaussian;
  const out: RepResult[] = [];
  for (const b of plan.blocks) {
    const blockEffect = p.blockSd * gaussian(rng);
    // drawn only when planted, so the seeded streams of the other tests stay as they were
    const armEffect = new Map(p.blockArmSd ? p.arms.map((a) => [a.name, p.blockArmSd! * gaussian(rng)]) : []);
    const seen = new Map<string, number>();
    b.sequence.forEach((arm, position) => {
      const rep = seen.get(arm) ?? 0;
      seen.set(arm, rep + 1);
      const level =
        Math.log(mu.get(arm)!) +
        blockEffect +
        (armEffect.get(arm) ?? 0) +
        p.drift * position +
        (position === 0 ? p.firstPosition + (p.firstPositionByArm?.[arm] ?? 0) : 0) +
        carried(p, arm, b.sequence[position - 1]) +
        p.sigma * repNoise(rng);
      const step_ms = Array.from({ length: steps }, () => Math.exp(level + stepSigma * gaussian(rng)));
      out.push({
        experiment: 'sim',
        block: b.index,
        attempt: 1,
        epoch: 1,
        arm,
        rep,
        position,
        step_ms,
        backend: 'cpu',
        mode: 'graph',
      });
    });
  }
  return out;
}

function carried(p: SimParams, arm: string, before: string | undefined): number {
  return (p.carry ?? []).filter((c) => c.arm === arm && c.after === before).reduce((s, c) => s + c.log, 0);
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

/** The input with one rep's every step `factor` times as long: a bad rep planted where the test says. */
export function plantRep(
  input: AnalysisInput,
  at: Pick<RepRef, 'block' | 'arm' | 'rep'>,
  factor: number,
): AnalysisInput {
  const hit = (r: RepResult) => r.block === at.block && r.arm === at.arm && r.rep === at.rep;
  if (!input.reps.some(hit)) throw new Error(`plantRep: no rep ${at.block}/${at.arm}/${at.rep} in the simulated input`);
  return { ...input, reps: input.reps.map((r) => (hit(r) ? { ...r, step_ms: r.step_ms.map((x) => x * factor) } : r)) };
}

/**
 * A leave-one-out program: all_on at `allOn`, no_<t> at allOn + worths[t], base at allOn + Σ worths
 * (savings that add), and with `aa` the control's A/A twin all_on_aa at all_on's level.
 */
export function leaveOneOutProgram(
  worths: Record<string, number>,
  aa: boolean,
  rest: Partial<SimParams> = {},
  allOn = 40,
): SimParams {
  const toggles = Object.keys(worths);
  const sum = toggles.reduce((s, t) => s + worths[t]!, 0);
  return {
    design: 'leave-one-out',
    control: 'all_on',
    toggles,
    arms: [
      { name: 'base', mu: allOn + sum, toggles: {} },
      { name: 'all_on', mu: allOn, toggles: {} },
      ...toggles.map((t) => ({ name: `no_${t}`, mu: allOn + worths[t]!, toggles: {} })),
      ...(aa ? [{ name: 'all_on_aa', mu: allOn, toggles: {}, aa_of: 'all_on' }] : []),
    ],
    blocks: 6,
    reps: 3,
    sigma: 0.02,
    blockSd: 0.05,
    drift: 0,
    firstPosition: 0,
    ...rest,
  };
}
