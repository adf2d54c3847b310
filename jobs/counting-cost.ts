/**
 * What counting launches costs a timed step, as measured on a card: the table the report's
 * "Launches" section and a rank's "counts off" reason quote, instead of a number of their own.
 * Each row is one measurement through `orch submit` (counting on against counting off, the arm's
 * median step, bench/h200/user-rank/counting3.sh prints the rows of its run in this shape), with where
 * and when it was made. A row is replaced by the next measurement of the same program and step.
 * Since counting3 the rank libraries count a rep's warm-up steps and pause the library for the timed
 * ones (before: the timed steps counted, graph +4.5 % cuda and +6.9 % torch, truth2.sh). The rows are
 * truth2.sh's of 2026-12-05 (bench/h200/runs/2026-12-05/truth2.txt); counting3's of 2026-12-04 read
 * 0.998, 1.001, 0.952, 0.996: the PyTorch eager step moves ±5 % by process on its own, counting or not.
 */

export interface CountingCostRow {
  /** the program measured, as the bench names it */
  program: string;
  /** the arm: eager or graph */
  step: string;
  /** median step with counting on over counting off */
  on_off: number;
  /** the card, the script and the date of the run */
  measured: string;
}

export const COUNTING_COST: readonly CountingCostRow[] = [
  {
    program: 'the CUDA example (examples/cuda-decode)',
    step: 'eager',
    on_off: 0.995,
    measured: 'H200, bench/h200/user-rank/truth2.sh, 2026-12-05',
  },
  {
    program: 'the CUDA example (examples/cuda-decode)',
    step: 'graph',
    on_off: 0.995,
    measured: 'H200, bench/h200/user-rank/truth2.sh, 2026-12-05',
  },
  {
    program: 'the PyTorch example (examples/torch-decode)',
    step: 'eager',
    on_off: 1.028,
    measured: 'H200, bench/h200/user-rank/truth2.sh, 2026-12-05',
  },
  {
    program: 'the PyTorch example (examples/torch-decode)',
    step: 'graph',
    on_off: 0.993,
    measured: 'H200, bench/h200/user-rank/truth2.sh, 2026-12-05',
  },
];

/** One sentence: each row's on/off ratio as a signed percentage, and where it was measured. */
export function countingCostSentence(rows: readonly CountingCostRow[] = COUNTING_COST): string {
  if (rows.length === 0) return 'What counting costs a timed step has not been measured.';
  const pct = (r: number) => `${r >= 1 ? '+' : '−'}${(Math.abs(r - 1) * 100).toFixed(1)} %`;
  const byProgram = new Map<string, CountingCostRow[]>();
  for (const r of rows) byProgram.set(r.program, [...(byProgram.get(r.program) ?? []), r]);
  const parts = [...byProgram].map(
    ([program, rs]) =>
      `${program}: ${rs.map((r) => `${r.step} ${pct(r.on_off)}`).join(', ')} (${[...new Set(rs.map((r) => r.measured))].join('; ')})`,
  );
  return `Counting's cost to a timed step, on against off through orch: ${parts.join('; ')}.`;
}
