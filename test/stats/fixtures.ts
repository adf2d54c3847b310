/** Small seeded experiments shared by the statistics' and reports' tests. */
import type { AnalysisInput } from '../../orchestrator/stats/types.ts';
import { type SimArm, type SimParams, seeded, simulateExperiment } from './simulate.ts';

/** An A/B with an A/A copy of the control: B is planted 3 % faster. */
export function abWithAa(
  seed = 1,
  overrides: Partial<SimParams> = {},
  extra: Partial<AnalysisInput> = {},
): AnalysisInput {
  const p: SimParams = {
    design: 'ab',
    control: 'A',
    arms: [
      { name: 'A', mu: 40, toggles: { graph: false } },
      { name: 'B', mu: 40 * 0.97, toggles: { graph: true } },
      { name: 'A_aa', mu: 40, toggles: { graph: false }, aa_of: 'A' },
    ],
    blocks: 4,
    reps: 3,
    sigma: 0.005,
    blockSd: 0.05,
    drift: 0.0005,
    firstPosition: 0.002,
    ...overrides,
  };
  return simulateExperiment(p, seeded(seed), { min_effect: 0.01, ...extra });
}

/**
 * A leave-one-out over three toggles whose savings add up (ms), with an A/A copy of all_on;
 * `more` adds arms made from these (a copy of one from another build).
 */
export function looExperiment(
  seed = 2,
  extra: Partial<AnalysisInput> = {},
  more: (arms: readonly SimArm[]) => SimArm[] = () => [],
): AnalysisInput {
  const worths = { pdl: 4.6, kda: 2.7, proj: 0.5 };
  const allOn = 47.5 - worths.pdl - worths.kda - worths.proj;
  const p: SimParams = {
    design: 'leave-one-out',
    control: 'all_on',
    toggles: Object.keys(worths),
    arms: [
      { name: 'base', mu: 47.5, toggles: {} },
      { name: 'all_on', mu: allOn, toggles: {} },
      ...Object.entries(worths).map(([t, w]) => ({ name: `no_${t}`, mu: allOn + w, toggles: {} })),
      { name: 'all_on_aa', mu: allOn, toggles: {}, aa_of: 'all_on' },
    ],
    blocks: 2,
    reps: 3,
    sigma: 0.004,
    blockSd: 0.02,
    drift: 0,
    firstPosition: 0,
  };
  p.arms.push(...more(p.arms));
  return simulateExperiment(p, seeded(seed), { min_effect: 0.01, ...extra });
}
