/**
 * Sequential stopping against the fixed design, simulated through orch's own analysis
 * (orchestrator/stats/analyze.ts, which replays the looks of sequential-looks.ts): seeded two-arm
 * experiments from test/stats/simulate.ts (log-normal reps, block noise), `BENCH_BLOCKS` blocks of
 * `BENCH_REPS` pairs, `BENCH_LOOKS` looks, at a true change of 0, 1× and 2× the fixed design's
 * minimum detectable effect (80 % power, alpha 0.05). Per row: how often each design says faster
 * (type-I at 0, power otherwise), how often the sequential one says equivalent, and the pairs each
 * spent on average (the sequential one's: the decisive look's blocks; it may have had one more
 * block running when it decided, which is not counted here).
 *   node --import tsx bench/sequential.ts      (BENCH_RUNS, default 200 per row)
 */
import { analyzeExperiment } from '../orchestrator/stats/analyze.ts';
import { detectableEffect } from '../orchestrator/stats/mde.ts';
import { seeded, simulateExperiment, twoArms } from '../test/stats/simulate.ts';

const env = process.env;
const RUNS = Number(env.BENCH_RUNS ?? 200);
const BLOCKS = Number(env.BENCH_BLOCKS ?? 10);
const REPS = Number(env.BENCH_REPS ?? 4);
const LOOKS = Number(env.BENCH_LOOKS ?? 5);
const SIGMA = 0.02;
const MIN_EFFECT = 0.01;
const ALPHA = 0.05;

const pairs = BLOCKS * REPS;
const mde = detectableEffect(pairs, Math.SQRT2 * SIGMA, ALPHA, 0.8, MIN_EFFECT) as number;

interface Row { effect: string; fixedFaster: number; seqFaster: number; seqSlower: number; seqEquivalent: number; fixedPairs: number; seqPairs: number }
const rows: Row[] = [];
for (const [label, change] of [['0 (null)', 0], ['1× MDE', mde], ['2× MDE', 2 * mde]] as const) {
  const row: Row = { effect: `${label}: ${(change * 100).toFixed(2)} %`, fixedFaster: 0, seqFaster: 0, seqSlower: 0, seqEquivalent: 0, fixedPairs: 0, seqPairs: 0 };
  for (let r = 0; r < RUNS; r++) {
    const p = twoArms(1 - change, { blocks: BLOCKS, reps: REPS, sigma: SIGMA, blockSd: 0.05 });
    const input = simulateExperiment(p, seeded(1000 + r), { min_effect: MIN_EFFECT, alpha: ALPHA });
    const fixed = analyzeExperiment(input);
    const seq = analyzeExperiment({ ...input, plan: { ...input.plan, sequential: { looks: LOOKS } }, ended: input.plan.blocks.map((b, i) => ({ block: b.index, ended_at: i })) });
    if (fixed.verdict === 'faster') row.fixedFaster++;
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
console.log(`${RUNS} runs per row; ${BLOCKS} blocks × ${REPS} pairs, ${LOOKS} looks, rep sd ${SIGMA * 100} %, min_effect ${MIN_EFFECT * 100} %, MDE ${(mde * 100).toFixed(2)} %`);
console.log('| true change | fixed: faster | sequential: faster | sequential: slower | sequential: equivalent | pairs fixed | pairs sequential | sequential / fixed |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) {
  console.log(`| ${r.effect} | ${pct(r.fixedFaster)} | ${pct(r.seqFaster)} | ${pct(r.seqSlower)} | ${pct(r.seqEquivalent)} | ${(r.fixedPairs / RUNS).toFixed(1)} | ${(r.seqPairs / RUNS).toFixed(1)} | ${(r.seqPairs / r.fixedPairs).toFixed(2)} |`);
}
