/**
 * How long analyzeExperiment takes on experiments of growing size (leave-one-out over k toggles,
 * A/A arm, 8 blocks). Run: node --import tsx bench/stats-analyze.ts
 */
import { analyzeExperiment } from '../orchestrator/stats/analyze.ts';
import { leaveOneOutProgram, seeded, simulateExperiment } from '../test/stats/simulate.ts';

for (const [k, reps] of [
  [2, 3],
  [4, 5],
  [8, 5],
  [12, 5],
] as const) {
  const worths = Object.fromEntries(Array.from({ length: k }, (_, i) => [`t${i}`, 1]));
  const p = leaveOneOutProgram(worths, true, {
    blocks: 8,
    reps,
    sigma: 0.01,
    blockSd: 0.05,
    drift: 0.0005,
    firstPosition: 0.002,
  });
  const input = simulateExperiment(p, seeded(k), { min_effect: 0.01 });
  const t0 = performance.now();
  const a = analyzeExperiment(input);
  const ms = performance.now() - t0;
  console.log(`${k} toggles, ${p.arms.length} arms, ${a.values.length} reps: ${ms.toFixed(0)} ms (${a.verdict})`);
}
