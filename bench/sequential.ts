/**
 * Sequential stopping against the fixed design, simulated through orch's own analysis
 * (orchestrator/stats/analyze.ts, which replays the looks of sequential-looks.ts): seeded two-arm
 * experiments from test/stats/simulate.ts (log-normal reps, block noise), `BENCH_BLOCKS` blocks of
 * `BENCH_REPS` pairs, `BENCH_LOOKS` looks, at a true change of 0, 1× and 2× the fixed design's
 * minimum detectable effect (80 % power, alpha 0.05). Per row: how often each design says faster
 * or slower (power, or at a true 0 the type-I error), how often the sequential one says
 * equivalent, and the pairs each spent on average (the sequential one's: the decisive look's
 * blocks; it may have had one more block running when it decided, which is not counted here).
 * At min_effect 1 % a verdict needs its CI beyond ±1 %, which hides the test's own error at a true
 * 0; the type-I row therefore runs at min_effect 0 (a verdict whenever the CI excludes 0), and
 * the equivalence row at min_effect = the MDE (the margin the design is powered for).
 *   node --import tsx bench/sequential.ts      (BENCH_RUNS, default 2000 per row; BENCH_ROWS=type-I: the rows whose label has it)
 */
import { analyzeExperiment } from '../orchestrator/stats/analyze.ts';
import { detectableEffect } from '../orchestrator/stats/mde.ts';
import { seeded, simulateExperiment, twoArms } from '../test/stats/simulate.ts';

const env = process.env;
const RUNS = Number(env.BENCH_RUNS ?? 2000);
const BLOCKS = Number(env.BENCH_BLOCKS ?? 10);
const REPS = Number(env.BENCH_REPS ?? 4);
const LOOKS = Number(env.BENCH_LOOKS ?? 5);
const SIGMA = 0.02;
const MIN_EFFECT = 0.01;
const ALPHA = 0.05;

const pairs = BLOCKS * REPS;
const mde = detectableEffect(pairs, Math.SQRT2 * SIGMA, ALPHA, 0.8, MIN_EFFECT) as number;

interface Row {
  effect: string;
  fixedSlower: number;
  fixedFaster: number;
  seqFaster: number;
  seqSlower: number;
  seqEquivalent: number;
  fixedPairs: number;
  seqPairs: number;
}
const rows: Row[] = [];
const scenarios = [
  ['0 (type-I), min_effect 0', 0, 0],
  ['0 (equivalence), min_effect = MDE', 0, mde],
  ['1× MDE', mde, MIN_EFFECT],
  ['2× MDE', 2 * mde, MIN_EFFECT],
] as const;
for (const [label, change, minEffect] of scenarios.filter(([l]) => l.includes(env.BENCH_ROWS ?? ''))) {
  const row: Row = {
    effect: `${label}: ${(change * 100).toFixed(2)} %`,
    fixedSlower: 0,
    fixedFaster: 0,
    seqFaster: 0,
    seqSlower: 0,
    seqEquivalent: 0,
    fixedPairs: 0,
    seqPairs: 0,
  };
  for (let r = 0; r < RUNS; r++) {
    const p = twoArms(1 - change, { blocks: BLOCKS, reps: REPS, sigma: SIGMA, blockSd: 0.05 });
    const input = simulateExperiment(p, seeded(1000 + r), { min_effect: minEffect, alpha: ALPHA });
    const fixed = analyzeExperiment(input);
    const seq = analyzeExperiment({
      ...input,
      plan: { ...input.plan, sequential: { looks: LOOKS } },
      ended: input.plan.blocks.map((b, i) => ({ block: b.index, ended_at: i })),
    });
    if (fixed.verdict === 'faster') row.fixedFaster++;
    if (fixed.verdict === 'slower') row.fixedSlower++;
    if (seq.verdict === 'faster') row.seqFaster++;
    if (seq.verdict === 'slower') row.seqSlower++;
    if (seq.verdict === 'equivalent') row.seqEquivalent++;
    row.fixedPairs += fixed.primary?.pairs ?? 0;
    const s = seq.sequential;
    row.seqPairs += s && s.decided_at !== null ? (s.looks[s.decided_at - 1]?.pairs ?? 0) : (fixed.primary?.pairs ?? 0);
  }
  rows.push(row);
}
const pct = (n: number) => `${((100 * n) / RUNS).toFixed(1)} %`;
console.log(
  `${RUNS} runs per row; ${BLOCKS} blocks × ${REPS} pairs, ${LOOKS} looks, rep sd ${SIGMA * 100} %, min_effect ${MIN_EFFECT * 100} % unless the row says, MDE ${(mde * 100).toFixed(2)} %; simulation se ${(100 * Math.sqrt((0.05 * 0.95) / RUNS)).toFixed(1)} points at 5 %`,
);
console.log(
  '| true change | fixed: faster | fixed: slower | sequential: faster | sequential: slower | sequential: equivalent | pairs fixed | pairs sequential | sequential / fixed |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
const decisive = (n: number) => `${((100 * n) / RUNS).toFixed(2)} %`;
for (const r of rows) {
  console.log(
    `| ${r.effect} | ${pct(r.fixedFaster)} | ${pct(r.fixedSlower)} | ${pct(r.seqFaster)} | ${pct(r.seqSlower)} | ${pct(r.seqEquivalent)} | ${(r.fixedPairs / RUNS).toFixed(1)} | ${(r.seqPairs / RUNS).toFixed(1)} | ${(r.seqPairs / r.fixedPairs).toFixed(2)} |`,
  );
}
// faster or slower at a true 0 is the type-I error: to two decimals, with its simulation se
for (const r of rows.filter((x) => x.effect.includes('type-I'))) {
  console.log(
    `type-I over ${RUNS} seeds: fixed ${decisive(r.fixedFaster + r.fixedSlower)}, sequential ${decisive(r.seqFaster + r.seqSlower)} (simulation se ${(100 * Math.sqrt((0.05 * 0.95) / RUNS)).toFixed(2)} points)`,
  );
}
