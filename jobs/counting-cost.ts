/**
 * What counting launches costs a timed step, as measured on a card: the table the report's
 * "Launches" section and a rank's "counts off" reason quote, instead of a number of their own.
 * Each row is one measurement through `orch submit` (counting on against counting off, the arm's
 * median step, bench/h200/user-rank/truth2.sh prints the rows of its run in this shape), with where
 * and when it was made. A row is replaced by the next measurement of the same program and step.
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
    on_off: 1.007,
    measured: 'H200, bench/h200/user-rank/truth2.sh, 2026-12-04',
  },
  {
    program: 'the CUDA example (examples/cuda-decode)',
    step: 'graph',
    on_off: 1.045,
    measured: 'H200, bench/h200/user-rank/truth2.sh, 2026-12-04',
  },
  {
    program: 'the PyTorch example (examples/torch-decode)',
    step: 'eager',
    on_off: 0.976,
    measured: 'H200, bench/h200/user-rank/truth2.sh, 2026-12-04',
  },
  {
    program: 'the PyTorch example (examples/torch-decode)',
    step: 'graph',
    on_off: 1.069,
    measured: 'H200, bench/h200/user-rank/truth2.sh, 2026-12-04',
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
