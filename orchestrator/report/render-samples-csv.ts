/**
 * samples.csv of a results directory: every measured step of every committed rep, one row each,
 * from the committed rep records (jobs/rep-result.ts: the gang's step time, the slowest rank's,
 * warm-up excluded), in run order. The report's tables hold one value per rep; this is what a
 * reader re-analyses or plots with their own tools. It is a record, like events.jsonl: written
 * with the results (orchestrator/results/write-results.ts), not re-rendered by `orch report --from`.
 */
import type { RepResult } from '../../jobs/rep-result.ts';
import { toCsv } from './render-csv.ts';

export const SAMPLES_HEADER = [
  'experiment',
  'block',
  'attempt',
  'position',
  'arm',
  'rep',
  'step',
  'step_ms',
  'mode',
  'backend',
  'host',
  'throttled',
] as const;

export function renderSamplesCsv(reps: readonly RepResult[]): string {
  const ordered = [...reps].sort((a, b) => a.block - b.block || a.position - b.position);
  const rows = ordered.flatMap((r) =>
    r.step_ms.map((ms, step) => [
      r.experiment,
      r.block,
      r.attempt,
      r.position,
      r.arm,
      r.rep,
      step,
      ms,
      r.mode,
      r.backend,
      r.host ?? null,
      (r.throttled ?? []).join('; '),
    ]),
  );
  return toCsv(SAMPLES_HEADER, rows);
}
