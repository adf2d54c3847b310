/**
 * The reference arm against one bad rep, simulated through orch's own analysis
 * (orchestrator/stats/analyze.ts with reference-arm.ts): seeded leave-one-out programs from
 * test/stats/simulate.ts (five toggles of planted worths, the control all_on and its A/A twin,
 * `BENCH_BLOCKS` blocks of `BENCH_REPS` reps per arm, normal or Student-t(3) rep noise), one rep of
 * the control planted `factor` times slower at a seeded place. Each run is analysed twice: as
 * orch analyses it now (the control pooled with its twin, an outlier set aside), and with the twin
 * left out of the plan and its reps (the control alone: the reference before). Per row: how often
 * each leave-one-out CI (no_<toggle> vs all_on) covers its planted truth — the mean over the five
 * toggles, the worst toggle's rate and all five at once — the mean CI width new/old, and reps set aside per run.
 * The worst of five is the minimum of five estimates, each with its simulation se: even when every
 * CI covers 95 %, it reads about 1.2 se low (the expected minimum of five normals), so it needs
 * thousands of runs before it says anything about one toggle.
 *   node --import tsx bench/reference-outlier.ts      (BENCH_RUNS, default 300 per row; BENCH_NOISES=t3 or normal,
 *   BENCH_FACTORS=1,1.3: only those rows)
 */
import { analyzeExperiment } from '../orchestrator/stats/analyze.ts';
import type { Analysis, AnalysisInput } from '../orchestrator/stats/types.ts';
import { leaveOneOutProgram, plantRep, seeded, simulateExperiment } from '../test/stats/simulate.ts';

const env = process.env;
const RUNS = Number(env.BENCH_RUNS ?? 300);
const BLOCKS = Number(env.BENCH_BLOCKS ?? 6);
const REPS = Number(env.BENCH_REPS ?? 3);
const NOISES = (env.BENCH_NOISES ?? 'normal,t3').split(',') as ('normal' | 't3')[];
const FACTORS = (env.BENCH_FACTORS ?? '1,1.15,1.3,2').split(',').map(Number);
const SIGMA = 0.02;
const ALL_ON = 40;
const WORTHS = { pdl: 4.6, kda: 2.7, proj: 1.2, fuse: 0.8, pin: 0.4 };
const TOGGLES = Object.keys(WORTHS) as (keyof typeof WORTHS)[];

/** The control alone: the plan and reps without the A/A twin. */
function withoutTwin(input: AnalysisInput): AnalysisInput {
  const twin = input.plan.arms.find((a) => a.aa_of !== undefined)!.name;
  const blocks = input.plan.blocks.map((b) => ({ ...b, sequence: b.sequence.filter((a) => a !== twin) }));
  return {
    ...input,
    plan: { ...input.plan, arms: input.plan.arms.filter((a) => a.name !== twin), blocks },
    reps: input.reps.filter((r) => r.arm !== twin),
  };
}

interface Tally {
  covered: number[];
  all: number;
  width: number;
  setAside: number;
}
const tally = (): Tally => ({ covered: TOGGLES.map(() => 0), all: 0, width: 0, setAside: 0 });

function score(t: Tally, a: Analysis): void {
  let every = true;
  TOGGLES.forEach((toggle, i) => {
    const c = a.comparisons.find((x) => x.arm === `no_${toggle}`)!;
    const truth = WORTHS[toggle] / ALL_ON;
    const ci = c.relative.ci;
    const hit = ci !== null && ci[0] <= truth && truth <= ci[1];
    if (hit) t.covered[i]!++;
    every &&= hit;
    t.width += ci === null ? 0 : (ci[1] - ci[0]) / TOGGLES.length;
  });
  if (every) t.all++;
  t.setAside += a.reference?.set_aside.length ?? 0;
}

const pct = (n: number) => `${((100 * n) / RUNS).toFixed(1)} %`;
console.log(
  `${RUNS} runs per row; leave-one-out, 5 toggles + all_on_aa, ${BLOCKS} blocks × ${REPS} reps per arm, rep sd ${SIGMA * 100} %, block sd 5 %; one all_on rep × factor`,
);
console.log(
  `coverage: share of runs whose ${95} % CI holds the planted worth (simulation se ${(100 * Math.sqrt((0.95 * 0.05) / RUNS)).toFixed(1)} points per CI)`,
);
console.log(
  '| rep noise | planted all_on rep | LOO CI covers, mean of 5: old | new | worst of 5: old | new | worst toggle, new | all five at once: old | new | CI width new / old | reps set aside per run |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const noise of NOISES) {
  for (const factor of FACTORS) {
    const old = tally();
    const now = tally();
    const place = seeded(77);
    for (let r = 0; r < RUNS; r++) {
      const p = leaveOneOutProgram(WORTHS, true, { blocks: BLOCKS, reps: REPS, sigma: SIGMA, noise }, ALL_ON);
      const clean = simulateExperiment(p, seeded(5000 + r), { min_effect: 0.01 });
      const at = { block: Math.floor(place() * BLOCKS), arm: 'all_on', rep: Math.floor(place() * REPS) };
      const input = factor === 1 ? clean : plantRep(clean, at, factor);
      score(now, analyzeExperiment(input));
      score(old, analyzeExperiment(withoutTwin(input)));
    }
    const worst = (t: Tally) => Math.min(...t.covered);
    const meanOf = (t: Tally) => t.covered.reduce((a, b) => a + b, 0) / TOGGLES.length;
    const planted = factor === 1 ? 'none' : `+${Math.round((factor - 1) * 100)} %`;
    console.log(
      `| ${noise} | ${planted} | ${pct(meanOf(old))} | ${pct(meanOf(now))} | ${pct(worst(old))} | ${pct(worst(now))} | ${TOGGLES[now.covered.indexOf(worst(now))]} | ${pct(old.all)} | ${pct(now.all)} | ${(now.width / old.width).toFixed(2)} | ${(now.setAside / RUNS).toFixed(2)} |`,
    );
  }
}
