/**
 * results/<experiment-id>/ from what the experiment left in Redis:
 *   spec.yaml     the spec exactly as registered at submit
 *   spec.hash     its hash (the canonical parsed spec's, fixed before any number existed)
 *   events.jsonl  every event of the stream, committed or not, with block/attempt/epoch/host/card/rank
 *   summary.json  state, blocks and their attempts, every planned rep accounted for, the analysis
 *   report.md     the statistics module's report
 *   samples.csv   every measured step of every committed rep (report/render-samples-csv.ts)
 *   reps.jsonl    every committed rep, one a line, every rank's answer in it (jobs/rep-result.ts):
 *                 what the card time and the trace read (never events.jsonl)
 * Only committed attempts' reps enter the analysis (they are what the results hash holds).
 * The events are streamed: each page of the stream (store/event-log.ts) is written to
 * events.jsonl and counted (event-digest.ts) before the next is
 * read, so memory does not grow with the events.
 */

import type { Redis } from 'ioredis';
import { exportJsonl } from '../../store/event-log.ts';
import { EventDigest } from '../report/event-digest.ts';
import { type Provenance, ProvenanceFold, provenanceOf } from '../report/provenance.ts';
import { recordTables, repsInOrder } from '../report/record-tables.ts';
import { renderReportFiles } from '../report/render-report-files.ts';
import { renderSamplesCsv } from '../report/render-samples-csv.ts';
import { ResultsOutDir } from '../report/results-out-dir.ts';
import { analyzeExperiment } from '../stats/analyze.ts';
import type { Analysis } from '../stats/types.ts';
import { analysisInput } from './analysis-input.ts';
import { type CollectedRecords, collectRecords } from './collect-results.ts';
import { type Accounting, accountReps } from './rep-fates.ts';
import { renderSummaryJson } from './summary-json.ts';
import type { SummaryJson } from './summary-schema.ts';

export type { Accounting } from './rep-fates.ts';

export interface WrittenResults {
  dir: string;
  analysis: Analysis & { provenance: Provenance };
  report: string;
  accounting: Accounting;
  state: string;
}

/** The analysis of an experiment's committed records (its devices from the commit records). */
export function analyzeRecords(c: CollectedRecords): Analysis {
  return analyzeExperiment(analysisInput(c));
}

export function accountFor(c: CollectedRecords): Accounting {
  return accountReps(c.exp, c.reps, c.failed);
}

export async function writeResults(
  redis: Redis,
  prefix: string,
  id: string,
  root = 'results',
): Promise<WrittenResults> {
  const c = await collectRecords(redis, prefix, id);
  // Results hold the spec with its run.env values and every event: readable by their owner
  // alone (files 0600 in a 0700 directory), and written through no planted link (orchestrator/report/results-out-dir.ts).
  const out = ResultsOutDir.open(root, id);
  try {
    return await writeInto(out, c);
  } finally {
    out.close();
  }
}

async function writeInto(out: ResultsOutDir, c: Awaited<ReturnType<typeof collectRecords>>): Promise<WrittenResults> {
  const writeFileSync = (name: string, data: string) => out.write(name, data);
  const digest = new EventDigest();
  // checked (and made 0600) like every file, then streamed; the stream's open follows no link either
  out.write('events.jsonl', '');
  await exportJsonl(out.pathOf('events.jsonl'), c.log.pages(c.commits), digest.add);
  // the hosts and cards from the commit records, then the reps' clocks and throttle reasons on them
  const records = new ProvenanceFold();
  for (const commit of Object.values(c.commits)) records.addCommit(commit);
  for (const r of repsInOrder(Object.values(c.reps))) records.addRep(r);
  const analysis = Object.assign(analyzeRecords(c), {
    provenance: provenanceOf(c.exp, records),
  });
  const accounting = accountFor(c);
  const files = renderReportFiles(
    analysis,
    recordTables({ reps: Object.values(c.reps), gates: Object.values(c.gates), commits: c.commits }),
  );
  const report = files['report.md']!;
  writeFileSync('spec.yaml', c.exp.specText);
  writeFileSync('spec.hash', `${c.exp.hash}\n`);
  const summary: SummaryJson = {
    experiment: c.exp.id,
    name: c.exp.name,
    hash: c.exp.hash,
    state: c.exp.state,
    reason: c.exp.reason,
    created: new Date(c.exp.created).toISOString(),
    ended: c.exp.ended === null ? null : new Date(c.exp.ended).toISOString(),
    file: c.exp.file,
    plan: c.exp.plan,
    blocks: c.blocks,
    commits: c.commits,
    // the committed identity gates, each rank's detail in each (orch report --from renders the ranks' table from them)
    gates: c.gates,
    accounting,
    events: { total: digest.total, committed: digest.committed },
    analysis,
  };
  writeFileSync('summary.json', renderSummaryJson(summary));
  writeFileSync('samples.csv', renderSamplesCsv(Object.values(c.reps)));
  writeFileSync(
    'reps.jsonl',
    Object.keys(c.reps)
      .sort()
      .map((k) => `${JSON.stringify(c.reps[k])}\n`)
      .join(''),
  );
  // The report, and the same analysis for machines (report.json, CSVs) and for eyes (SVG plots).
  for (const [file, text] of Object.entries(files)) writeFileSync(file, text);
  return { dir: out.dir, analysis, report, accounting, state: c.exp.state };
}
