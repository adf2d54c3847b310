/**
 * `orch report --from <dir>`: every report file of a results directory rebuilt from the
 * directory alone (no Redis): the recorded analysis and events re-rendered by the renderer the
 * run wrote them with (render-report-files.ts), so the files come out byte for byte the same.
 * The tables come from the committed records the directory holds (reps.jsonl, summary.json's gates
 * and commits: record-tables.ts), never from events.jsonl.
 */
import type { Analysis } from '../stats/types.ts';
import { recordTables } from './record-tables.ts';
import { renderReportFiles } from './render-report-files.ts';
import { readResultsDir } from './results-dir.ts';
import { ResultsOutDir } from './results-out-dir.ts';

export interface RebuiltReport {
  dir: string;
  experiment: string;
  state: string;
  accounting: unknown;
  analysis: Analysis;
  report: string;
  files: string[];
}

export async function rebuildReport(dir: string): Promise<RebuiltReport> {
  const r = readResultsDir(dir);
  // events.jsonl is read through, line by line through its schema, only to refuse a directory
  // holding a malformed one (EVENTS_FILE_INVALID); no number of the report comes from it
  for await (const _ of r.events());
  const files = renderReportFiles(
    r.summary.analysis,
    recordTables({ reps: r.reps(), gates: r.gates, commits: r.commits }),
  );
  // 0600, and through no link planted at a report file (orchestrator/report/results-out-dir.ts)
  const out = ResultsOutDir.existing(dir);
  try {
    for (const [name, text] of Object.entries(files)) out.write(name, text);
  } finally {
    out.close();
  }
  return {
    dir,
    experiment: r.summary.experiment,
    state: r.summary.state,
    accounting: r.summary.accounting,
    analysis: r.summary.analysis,
    report: files['report.md']!,
    files: Object.keys(files),
  };
}
