/**
 * A nightly suite's false alerts and found regressions, simulated through orch's own code end to
 * end but for the cards: each of a night's `BENCH_COMPARISONS` specs is a seeded two-arm experiment
 * (test/stats/simulate.ts: 4 blocks × 3 pairs, rep sd `sigma`, block sd 5 %) analysed by
 * analyzeExperiment, read into the night's rows by the nightly's own night-rows.ts, judged with
 * the night's Benjamini–Hochberg correction (night-findings.ts, at the default false discovery rate
 * and at 0.05)
 * and every suspected regression run again and confirmed or not (confirm-regressions.ts) before it
 * alerts. `BENCH_PLANTED` of the specs run their candidate 3 % slower; the rest are nulls. Each
 * night is judged as the first of its series (no earlier night), so every planted regression is
 * new every night. Per row: alerts on nulls per night, what the uncorrected per-comparison rule
 * would have said, planted regressions alerted and confirmed, and the share of nights that
 * alerted all of them.
 *   node --import tsx bench/nightly-suite.ts      (BENCH_NIGHTS, default 100; BENCH_SIGMAS, BENCH_FDRS: comma lists)
 */

import type { NightlyRow } from '../history/history-store.ts';
import { confirmRegressions } from '../orchestrator/nightly/confirm-regressions.ts';
import { DEFAULT_FDR, findings } from '../orchestrator/nightly/night-findings.ts';
import { type RowContext, rowsFromResults } from '../orchestrator/nightly/night-rows.ts';
import { analyzeExperiment } from '../orchestrator/stats/analyze.ts';
import { seeded, simulateExperiment, twoArms } from '../test/stats/simulate.ts';

const env = process.env;
const NIGHTS = Number(env.BENCH_NIGHTS ?? 100);
const COMPARISONS = Number(env.BENCH_COMPARISONS ?? 200);
const PLANTED = Number(env.BENCH_PLANTED ?? 5);
const REGRESSION = 0.03;
const MIN_EFFECT = 0;
const ALPHA = 0.05;

const specFile = (i: number) => `/suite/spec-${i}.yaml`;
const isPlanted = (file: string) => Number(/spec-(\d+)\.yaml/.exec(file)![1]) < PLANTED;

/** Spec i's experiment of one night (or its confirmation): the control and a candidate, 3 % slower when planted. */
function experimentRows(night: number, i: number, seed: number, sigma: number, id: string): NightlyRow[] {
  const ratio = i < PLANTED ? 1 + REGRESSION : 1;
  const p = twoArms(ratio, { blocks: 4, reps: 3, sigma, blockSd: 0.05 });
  const analysis = analyzeExperiment(simulateExperiment(p, seeded(seed), { min_effect: MIN_EFFECT, alpha: ALPHA }));
  const ctx: RowContext = {
    run_id: `night-${night}`,
    suite: 'sim',
    scheduled_at: night,
    spec_file: specFile(i),
    spec_name: `spec-${i}`,
    spec_hash: 'sim',
    commits: {},
    pairing: null,
  };
  return rowsFromResults(ctx, id, { dir: `/nonexistent/${id}`, analysis, state: 'done' });
}

interface Tally {
  nullAlerts: number;
  uncorrected: number;
  uncorrectedSlower: number;
  found: number;
  confirmed: number;
  allFound: number;
}

async function night(n: number, sigma: number, fdr: number, t: Tally): Promise<void> {
  const rows = Array.from({ length: COMPARISONS }, (_, i) =>
    experimentRows(n, i, 1_000_000 * (n + 1) + i, sigma, `e-${n}-${i}`),
  ).flat();
  t.uncorrected += rows.filter(
    (r) => !isPlanted(r.spec_file) && (r.verdict === 'slower' || r.verdict === 'faster'),
  ).length;
  t.uncorrectedSlower += rows.filter((r) => !isPlanted(r.spec_file) && r.verdict === 'slower').length;
  const rerun = async (s: NightlyRow) => {
    const i = Number(/spec-(\d+)\.yaml/.exec(s.spec_file)![1]);
    return experimentRows(n, i, 7_000_000 * (n + 1) + i, sigma, `${s.experiment}-confirm`);
  };
  const judged = await confirmRegressions(findings(rows, [], fdr), rerun);
  const alerted = judged.alerts.filter((a) => a.kind === 'regression');
  t.nullAlerts += alerted.filter((a) => !isPlanted(a.spec_file)).length;
  const found = alerted.filter((a) => isPlanted(a.spec_file));
  t.found += found.length;
  t.confirmed += found.filter((a) => a.message.includes('; confirmed by a paired confirmation run')).length;
  if (found.length === PLANTED) t.allFound++;
}

console.log(
  `${NIGHTS} nights a row; ${COMPARISONS} comparisons a night, ${PLANTED} of them planted ${REGRESSION * 100} % slower; 4 blocks × 3 pairs each, min_effect ${MIN_EFFECT}, alpha ${ALPHA}; q: the night's false discovery rate (default ${DEFAULT_FDR})`,
);
console.log(
  '| rep sd | q | null "slower or faster" a night, uncorrected | null "slower" a night, uncorrected | false alerts a night (corrected + confirmed) | planted alerted | of them confirmed | nights all planted alerted |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
const list = (v: string | undefined, d: number[]) => (v === undefined ? d : v.split(',').map(Number));
const cases = list(env.BENCH_SIGMAS, [0.01, 0.015]).flatMap((sigma) =>
  list(env.BENCH_FDRS, [DEFAULT_FDR, 0.05]).map((fdr) => [sigma, fdr] as const),
);
for (const [sigma, fdr] of cases) {
  const t: Tally = { nullAlerts: 0, uncorrected: 0, uncorrectedSlower: 0, found: 0, confirmed: 0, allFound: 0 };
  for (let n = 0; n < NIGHTS; n++) await night(n, sigma, fdr, t);
  const pct = (x: number, of: number) => `${((100 * x) / of).toFixed(1)} %`;
  console.log(
    `| ${sigma * 100} % | ${fdr} | ${(t.uncorrected / NIGHTS).toFixed(2)} | ${(t.uncorrectedSlower / NIGHTS).toFixed(2)} | ${(t.nullAlerts / NIGHTS).toFixed(3)} | ${pct(t.found, NIGHTS * PLANTED)} | ${pct(t.confirmed, Math.max(1, t.found))} | ${pct(t.allFound, NIGHTS)} |`,
  );
}
