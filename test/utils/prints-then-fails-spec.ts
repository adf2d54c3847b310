/**
 * A per-rep command that prints PRINTED numbered lines on each stream and exits 1: the fixture of a
 * failed rank's last lines (jobs/rank-output-tail.ts), run embedded (test/report/failed-rank-output)
 * and on a cluster (test/cli/failed-output-cluster). LAST_KEPT: the line numbers the tail keeps.
 */
import { RANK_OUTPUT_TAIL_LINES } from '../../jobs/rank-output-tail.ts';

export const PRINTED = 30;

export const PRINTS_THEN_FAILS_SPEC = `name: prints-then-fails
design: ab
workload:
  runtime: command
  run:
    cmd: 'i=1; while [ $i -le ${PRINTED} ]; do echo "out line $i"; echo "err line $i" >&2; i=$((i+1)); done; exit 1'
  toggles: { FAST: { env: FAST, on: "1", off: "0" } }
  metric_source: { format: jsonl, field: ms }
  warmup: 1
  steps: 2
toggles: [FAST]
arms: [{ name: slow, toggles: { FAST: false } }, { name: fast, toggles: { FAST: true } }]
reps: 2
blocks: { count: 1 }
gates: { identity: false, aa: false }
metric: { name: ms, better: lower }
`;

/** The line numbers of each stream a failed rank's tail keeps: the last RANK_OUTPUT_TAIL_LINES printed. */
export const LAST_KEPT = Array.from(
  { length: RANK_OUTPUT_TAIL_LINES },
  (_, i) => PRINTED - RANK_OUTPUT_TAIL_LINES + 1 + i,
);
