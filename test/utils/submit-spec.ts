/**
 * `orch submit` of a spec written by a test (the embedded default), and the results directory it
 * wrote: exit code, output, report.md, summary.json and the committed-or-not events, for tests
 * that check what a user would read.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SummaryJson, SummaryJsonSchema } from '../../orchestrator/results/summary-schema.ts';
import { ORCH_BIN } from './worker-process.ts';

export interface Submitted {
  code: number | null;
  /** the results directory */
  dir: string;
  output: string;
  report: string;
  summary: SummaryJson;
  /** events.jsonl, one parsed record per line */
  events: { block: number; card: string; rank: number; committed: boolean; event: Record<string, unknown> }[];
}

export function submitSpec(
  name: string,
  yaml: string,
  env: Record<string, string> = {},
  timeoutMs = 240_000,
): Submitted {
  const dir = mkdtempSync(join(tmpdir(), `orch-${name}-`));
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, yaml);
  const results = join(dir, 'results');
  const r = spawnSync(process.execPath, [ORCH_BIN, 'submit', file, '--results', results], {
    env: { ...process.env, ORCH_LOG: 'warn', ...env },
    encoding: 'utf8',
    timeout: timeoutMs,
  });
  const output = `${r.stdout}${r.stderr}`;
  return { code: r.status, output, ...readWritten(results, `exit ${r.status}: ${output}`) };
}

/**
 * The one experiment `orch submit --results RESULTS` wrote there: its directory, report.md,
 * summary.json (through its schema) and events.jsonl (`E`: the fields of a record the caller
 * reads); throws with `context` (the submit's exit and output) when nothing was written.
 */
export function readWritten<E = Submitted['events'][number]>(
  results: string,
  context: string,
): Omit<Submitted, 'code' | 'output' | 'events'> & { events: E[] } {
  const [exp] = existsSync(results) ? readdirSync(results) : [];
  if (exp === undefined) throw new Error(`orch submit wrote no results (${context})`);
  const at = join(results, exp);
  const read = (f: string) => readFileSync(join(at, f), 'utf8');
  return {
    dir: at,
    report: read('report.md'),
    summary: SummaryJsonSchema.parse(JSON.parse(read('summary.json'))),
    events: read('events.jsonl')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as E),
  };
}
