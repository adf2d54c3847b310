/**
 * Reading a results directory back (what orchestrator/results/write-results.ts wrote): its
 * summary.json (the recorded analysis, with provenance, and the commit records), reps.jsonl (the
 * committed reps, every rank's answer in each) and events.jsonl. `orch report --from`
 * and `orch compare` read results only through here, so a directory that is not one is refused
 * the same way by both. The events are not read here: `events()` streams them, line by line
 * through their schema (store/event-log.ts), for a reader that folds them.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { type CommitRecord, CommitRecordSchema } from '../../jobs/commit-record.ts';
import { UserInputError } from '../../jobs/errors.ts';
import { type GateResult, GateResultSchema } from '../../jobs/gate-result.ts';
import { messageOf } from '../../jobs/message-of.ts';
import { type RepResult, RepResultSchema } from '../../jobs/rep-result.ts';
import { describeIssues } from '../../jobs/schema-issues.ts';
import type { StreamEvent } from '../../jobs/stream-event.ts';
import { importJsonl } from '../../store/event-log.ts';
import { type BusyShareRow, busyShare } from '../stats/busy-share.ts';
import type { Analysis } from '../stats/types.ts';
import type { Provenance } from './provenance.ts';

/**
 * What readers of summary.json use: the envelope is parsed field by field, the rest kept as
 * written (a reader of the plan's blocks reads them there); the analysis (written by
 * orchestrator/stats, no schema of its own) is checked for the parts every reader walks.
 */
const SummarySchema = z.looseObject({
  experiment: z.string(),
  hash: z.string(),
  state: z.string(),
  accounting: z.unknown(),
  /** the commit record of each committed block (absent in a directory older than the field) */
  commits: z.record(z.string(), CommitRecordSchema).optional(),
  /** the committed identity gates (absent in a directory older than the field) */
  gates: z.record(z.string(), GateResultSchema).optional(),
  plan: z.looseObject({
    arms: z.array(
      z.looseObject({
        name: z.string(),
        build: z.string().optional(),
        toggles: z.record(z.string(), z.union([z.boolean(), z.string()])),
      }),
    ),
  }),
  analysis: z.custom<Analysis & { provenance?: Provenance }>(
    (a) =>
      typeof a === 'object' &&
      a !== null &&
      ['values', 'arms', 'comparisons'].every((f) => Array.isArray((a as Record<string, unknown>)[f])),
    'the analysis needs values, arms and comparisons (lists)',
  ),
});

export interface ResultsDir {
  dir: string;
  summary: z.infer<typeof SummarySchema>;
  /** results/<id>/events.jsonl */
  eventsFile: string;
  /** the events, streamed from eventsFile (each line through its schema) */
  events(): AsyncGenerator<StreamEvent>;
  /** the committed reps of reps.jsonl (each line through its schema); none in a directory older than the file */
  reps(): RepResult[];
  commits: Record<string, CommitRecord>;
  gates: GateResult[];
}

/** The card time of a results directory: its committed reps and commit records (busy-share.ts), never its events. */
export function cardTimeOf(r: ResultsDir): BusyShareRow[] {
  return busyShare(r.reps(), r.commits);
}

/** reps.jsonl as orchestrator/results/write-results.ts writes it: one committed rep a line; none without the file. */
export function readRepsFile(file: string, dir = file): RepResult[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l, i) => {
      const r = RepResultSchema.safeParse(JSON.parse(l));
      if (!r.success) throw notResults(dir, `reps.jsonl line ${i + 1} ${describeIssues(r.error)}`);
      return r.data;
    });
}

const notResults = (dir: string, why: string) =>
  new UserInputError('RESULTS_DIR_INVALID', `${dir} is not an orch results directory: ${why}`, {
    hint: 'give results/<experiment-id> as orch submit or orch report wrote it (it holds summary.json, events.jsonl, spec.yaml)',
  });

/** `ref` is a directory, or an experiment id under `root`. */
export function resolveResultsDir(ref: string, root = 'results'): string {
  if (existsSync(ref)) return ref;
  const under = join(root, ref);
  if (existsSync(under)) return under;
  throw new UserInputError('RESULTS_DIR_INVALID', `no results directory ${ref} (nor ${under})`, {
    hint: 'give a results directory, or an experiment id under --results',
  });
}

export function readResultsDir(dir: string): ResultsDir {
  if (!existsSync(dir)) throw notResults(dir, 'it does not exist');
  if (!statSync(dir).isDirectory()) throw notResults(dir, 'not a directory');
  const file = join(dir, 'summary.json');
  if (!existsSync(file)) throw notResults(dir, 'it has no summary.json');
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw notResults(dir, `summary.json is not JSON (${messageOf(err)})`);
  }
  const parsed = SummarySchema.safeParse(json);
  if (!parsed.success) throw notResults(dir, `summary.json ${describeIssues(parsed.error)}`);
  const summary = parsed.data;
  const eventsFile = join(dir, 'events.jsonl');
  if (!existsSync(eventsFile)) throw notResults(dir, 'it has no events.jsonl');
  const repsFile = join(dir, 'reps.jsonl');
  return {
    dir,
    summary,
    eventsFile,
    events: () => importJsonl(eventsFile),
    reps: () => readRepsFile(repsFile, dir),
    commits: summary.commits ?? {},
    gates: Object.values(summary.gates ?? {}),
  };
}
