/**
 * Reading a command workload's metric from its output: JSON lines, or a regex with named groups
 * (a trainer's `timer step 6300: total=497ms data=0.1ms fwd=199ms …`). Pure: shared by the spec's
 * compile step (checkMetricSource) and the worker (MetricParser, selectMeasured).
 *
 * Step rules of a rep: a sample's step index is the parsed step group/field, else its
 * order among metric lines (0-based). Steps with an index below `warmup` are excluded, and step 0
 * is never a step (it carries one-time costs: autotuning, lazy init, first capture).
 */
import { UserInputError } from './errors.ts';
import { messageOf } from './message-of.ts';
import { nestedQuantifier } from './regex-backtracking.ts';

/** Structurally the spec's `workload.metric_source` (jobs/spec-schema/command-workload.ts). */
export type MetricSourceInput =
  | { format: 'jsonl'; field: string; step_field?: string | undefined }
  | { format: 'regex'; pattern: string; value_group: string; step_group?: string | undefined };

/** One problem with a metric source: the key inside `metric_source` it is about. */
export interface MetricSourceIssue {
  field: 'pattern';
  message: string;
  fix?: string;
}

export interface MetricSample {
  /** The step index: parsed, or the sample's order among metric lines. */
  step: number;
  value: number;
  /** 1-based line number in the output. */
  line: number;
}

export const METRIC_SOURCE_PATH = 'workload.metric_source';

/** The named groups a pattern defines (matching the alternation `|` against '' lists them all). */
function groupNames(re: RegExp): string[] {
  const m = new RegExp(`(?:${re.source})|`, re.flags.replace('g', '').replace('y', '')).exec('');
  return Object.keys(m?.groups ?? {});
}

/**
 * Spec-time checks (called from the spec's compile step): the regex compiles and has the named
 * groups the metric needs. Returns every issue; an empty list means the source is usable.
 */
export function checkMetricSource(src: MetricSourceInput): MetricSourceIssue[] {
  if (src.format === 'jsonl') return [];
  let re: RegExp;
  try {
    re = new RegExp(src.pattern);
  } catch (err) {
    return [{ field: 'pattern', message: `not a valid regular expression: ${messageOf(err)}` }];
  }
  const nested = nestedQuantifier(src.pattern);
  if (nested !== null) {
    return [
      {
        field: 'pattern',
        message: `the regex can backtrack for seconds on one line: ${nested}; it would run on the worker while its lease needs renewing`,
        fix: 'repeat a single atom instead, e.g. (?<value>[0-9.]+) rather than (?<value>(\\d+\\.?)+)',
      },
    ];
  }
  const names = groupNames(re);
  const have =
    names.length === 0 ? 'it has no named groups' : `its named groups are ${names.map((n) => `"${n}"`).join(', ')}`;
  const issues: MetricSourceIssue[] = [];
  const need: [string, string][] = [['value_group', src.value_group]];
  if (src.step_group !== undefined) need.push(['step_group', src.step_group]);
  for (const [key, group] of need) {
    if (!names.includes(group)) {
      const other = names.length > 0 ? `, or set ${key} to one of ${names.join(', ')}` : '';
      issues.push({
        field: 'pattern',
        message: `the regex lacks the named group "${group}" that ${key} names (${have})`,
        fix: `write (?<${group}>…) around the number, e.g. total=(?<${group}>[0-9.]+)ms${other}`,
      });
    }
  }
  return issues;
}

function fieldAt(obj: unknown, dotted: string): unknown {
  let cur: unknown = obj;
  for (const part of dotted.split('.')) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function toNumber(raw: unknown): number | null {
  if (typeof raw === 'number') return Number.isFinite(raw) ? raw : null;
  if (typeof raw !== 'string' || raw.trim() === '') return null;
  const n = Number(raw);
  return Number.isFinite(n) ? n : null;
}

/** Parses a command's output line by line into metric samples. */
export class MetricParser {
  private readonly re: RegExp | null;
  private count = 0;
  private lineNo = 0;

  constructor(
    private readonly src: MetricSourceInput,
    private readonly path = METRIC_SOURCE_PATH,
  ) {
    const issues = checkMetricSource(src);
    if (issues.length > 0) {
      throw new UserInputError(
        'METRIC_SOURCE_INVALID',
        issues.map((i) => `${path}.${i.field}: ${i.message}${i.fix ? ` — ${i.fix}` : ''}`).join('\n'),
      );
    }
    this.re = src.format === 'regex' ? new RegExp(src.pattern) : null;
  }

  /** The regex of a regex source (for a caller that matches elsewhere: parseMatched). */
  get pattern(): string | null {
    return this.src.format === 'regex' ? this.src.pattern : null;
  }

  /**
   * A sample, or null for a line that carries no metric. Throws on a metric line with a bad number.
   * Runs a regex source's regex here, on the caller's thread: the worker matches on a thread with
   * a time budget instead (worker/command/metric-regex-thread.ts) and hands the groups to parseMatched.
   */
  parseLine(text: string): MetricSample | null {
    if (this.src.format === 'regex') {
      const m = this.re!.exec(text);
      return this.parseMatched(text, m ? { ...(m.groups ?? {}) } : null);
    }
    return this.parseMatched(text, null);
  }

  /**
   * parseLine with the regex's named groups already matched (null: no match); for a jsonl source
   * the groups are ignored. Lines must come in output order, every one of them (line numbers).
   */
  parseMatched(text: string, groups: Record<string, string | undefined> | null): MetricSample | null {
    this.lineNo += 1;
    const line = this.lineNo;
    let rawValue: unknown;
    let rawStep: unknown;
    let valueName: string;
    let stepName: string | undefined;
    if (this.src.format === 'regex') {
      if (!groups) return null;
      valueName = `${this.path}.value_group "${this.src.value_group}"`;
      rawValue = groups[this.src.value_group];
      stepName = this.src.step_group === undefined ? undefined : `${this.path}.step_group "${this.src.step_group}"`;
      rawStep = this.src.step_group === undefined ? undefined : groups[this.src.step_group];
    } else {
      const t = text.trim();
      if (!t.startsWith('{')) return null;
      let obj: unknown;
      try {
        obj = JSON.parse(t);
      } catch {
        return null;
      }
      rawValue = fieldAt(obj, this.src.field);
      if (rawValue === undefined) return null;
      valueName = `${this.path}.field "${this.src.field}"`;
      stepName = this.src.step_field === undefined ? undefined : `${this.path}.step_field "${this.src.step_field}"`;
      rawStep = this.src.step_field === undefined ? undefined : fieldAt(obj, this.src.step_field);
    }
    const value = toNumber(rawValue);
    if (value === null) {
      throw new UserInputError(
        'METRIC_NOT_A_NUMBER',
        `${valueName} read ${JSON.stringify(rawValue ?? null)} on output line ${line}, not a number: ${clip(text)}`,
        {
          hint: 'capture only the digits, e.g. total=(?<value>[0-9.]+)ms',
        },
      );
    }
    let step = this.count;
    if (stepName !== undefined) {
      const s = toNumber(rawStep);
      if (s === null || !Number.isInteger(s) || s < 0) {
        throw new UserInputError(
          'METRIC_BAD_STEP',
          `${stepName} read ${JSON.stringify(rawStep ?? null)} on output line ${line}, not a step index (a non-negative integer): ${clip(text)}`,
        );
      }
      step = s;
    }
    this.count += 1;
    return { step, value, line };
  }
}

function clip(s: string, n = 200): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}

/** What a rep's samples came to: the measured values and what was set aside. */
export interface MeasuredSteps {
  values: number[];
  steps: number[];
  /** Samples excluded as warm-up (index < warmup, or step 0). */
  excluded: number;
}

/**
 * Keeps the samples with step index >= max(warmup, 1) in output order, the first `steps` of them.
 * Throws a UserInputError (naming the spec path) when the output had no metric line at all or
 * too few measured ones. `tail` is the end of the output, quoted in the error.
 */
export function selectMeasured(
  samples: MetricSample[],
  opts: { warmup: number; steps: number; describe: string; tail: string; path?: string },
): MeasuredSteps {
  const path = opts.path ?? METRIC_SOURCE_PATH;
  if (samples.length === 0) {
    throw new UserInputError(
      'METRIC_NO_LINES',
      `${path}: the run printed no metric line (${opts.describe}); last output:\n${opts.tail || '(no output)'}`,
      {
        hint: `check workload.run.cmd prints one line per step that ${path} matches`,
      },
    );
  }
  const first = Math.max(opts.warmup, 1);
  const kept = samples.filter((s) => s.step >= first);
  if (kept.length < opts.steps) {
    throw new UserInputError(
      'METRIC_TOO_FEW_STEPS',
      `${path}: the run printed ${samples.length} metric line(s) (steps ${samples[0]!.step}..${samples[samples.length - 1]!.step}), ${kept.length} with step >= ${first}, but workload.steps is ${opts.steps} (${opts.describe})`,
      {
        hint: 'make the command run warmup + steps steps (it gets ORCH_WARMUP and ORCH_STEPS), or lower workload.steps',
      },
    );
  }
  const used = kept.slice(0, opts.steps);
  return { values: used.map((s) => s.value), steps: used.map((s) => s.step), excluded: samples.length - kept.length };
}
