/**
 * Config files → validated objects. Every file under configs/ is one of three kinds, told
 * apart by its top-level `kind:` (default `experiment`): an experiment spec, a nightly suite,
 * or a cluster file. Errors are a SpecError listing every issue with file, YAML line, dotted
 * path and a fix; nothing is silently corrected.
 */
import { existsSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import type { z } from 'zod';
import { ALERT_DIR_ENV, alertFileProblem, alertRoots } from '../../jobs/alert-place.ts';
import { hashableSpec } from '../../jobs/build-refs.ts';
import { type Cluster, ClusterSchema } from '../../jobs/cluster.ts';
import type { CompileProblem } from '../../jobs/compile-problem.ts';
import { compileSpec } from '../../jobs/compile-spec.ts';
import { suggestion } from '../../jobs/did-you-mean.ts';
import { SpecError, type SpecIssue } from '../../jobs/errors.ts';
import { isOneOf } from '../../jobs/one-of.ts';
import { readSpecFile } from '../../jobs/read-spec-file.ts';
import { overlapsCut, salvageParse } from '../../jobs/salvage-parse.ts';
import { type Spec, SpecSchema } from '../../jobs/spec.ts';
import { specHash } from '../../jobs/spec-hash.ts';
import { entryFile, type Suite, SuiteSchema } from '../../jobs/suite.ts';
import { formatPath, type PathSegment, parseYamlSource, type YamlSource } from '../../jobs/yaml-source.ts';
import { zodIssuesToSpecIssues } from '../../jobs/zod-issues.ts';
import { resolveBuildRefs } from './resolve-build-refs.ts';

export const CONFIG_KINDS = ['experiment', 'suite', 'cluster'] as const;
export type ConfigKind = (typeof CONFIG_KINDS)[number];

/**
 * A loaded experiment spec: the text it was read from and what it compiled to. `text` is what is
 * registered at submit (and written to results/<id>/spec.yaml), `hash` the hash of `spec`: a
 * caller that changes the spec (a paired night's builds) changes the text too, so the two always
 * describe the same spec.
 */
export interface LoadedSpec {
  file: string;
  /** the YAML as written, verbatim */
  text: string;
  spec: Spec;
  hash: string;
}

export type LoadedConfig =
  | ({ kind: 'experiment' } & LoadedSpec)
  | { kind: 'suite'; file: string; suite: Suite }
  | { kind: 'cluster'; file: string; cluster: Cluster };

/** Reads and validates an experiment spec; throws SpecError with every issue. */
export function loadSpec(file: string): LoadedSpec {
  const loaded = loadConfigFile(file);
  if (loaded.kind !== 'experiment') {
    throw new SpecError([
      {
        file,
        line: 1,
        path: 'kind',
        message: `this is a ${loaded.kind} file, not an experiment spec`,
        fix: 'pass an experiment spec',
      },
    ]);
  }
  return { file: loaded.file, text: loaded.text, spec: loaded.spec, hash: loaded.hash };
}

/** Reads and validates a config file of any kind; throws SpecError with every issue. */
export function loadConfigFile(file: string): LoadedConfig {
  return parseConfigText(file, readSpecFile(file));
}

/**
 * As loadConfigFile, from text already read (`file` names it in messages). A suite's
 * experiment files are read from disk, relative to `file`.
 */
export function parseConfigText(file: string, text: string, only?: ConfigKind): LoadedConfig {
  const source = parseYamlSource(file, text);
  if (source.issues.length > 0) throw new SpecError(source.issues);
  const data = source.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new SpecError([
      {
        file,
        line: source.lineOf([]),
        path: '',
        message: 'expected a mapping (key: value lines) at the top level',
        fix: 'start with name: … and design: …',
      },
    ]);
  }
  const kind = (data as { kind?: unknown }).kind ?? 'experiment';
  if (only !== undefined && kind !== only && typeof kind === 'string' && isOneOf(CONFIG_KINDS, kind)) {
    // Refused before its content is checked: a suite inside a suite would be read recursively.
    throw new SpecError([
      {
        file,
        line: source.lineOf(['kind']),
        path: 'kind',
        message: `this is a ${kind} file, not ${only === 'experiment' ? 'an' : 'a'} ${only} file`,
        fix: `pass ${only === 'experiment' ? 'an experiment spec' : `a ${only} file`}`,
      },
    ]);
  }
  switch (kind) {
    case 'experiment': {
      const parsed = validate(file, source, SpecSchema, {
        schema: SpecSchema,
        check: (salvaged, cut) =>
          compileSpec(salvaged)
            .problems.filter((p) => !overlapsCut(p.path, cut))
            .map((p) => toIssue(file, source, p)),
      });
      const { spec, problems } = compileSpec(parsed);
      // Refs resolve only in a spec that is otherwise whole (a misspelt build name says so first).
      if (problems.length === 0) problems.push(...resolveBuildRefs(spec, file));
      if (problems.length > 0) {
        throw new SpecError(problems.map((p) => toIssue(file, source, p)));
      }
      return { kind: 'experiment', file, text, spec, hash: specHash(hashableSpec(spec)) };
    }
    case 'suite': {
      // Salvaged with every top-level key optional: a suite's experiments are worth checking even
      // when its schedule is wrong.
      const suite = validate(file, source, SuiteSchema, {
        schema: SuiteSchema.partial(),
        check: (salvaged, cut) =>
          suiteIssues(file, source, salvaged).filter((i) => i.file !== file || !overlapsCut(pathOf(i.path), cut)),
      });
      checkSuiteExperiments(file, source, suite);
      return { kind: 'suite', file, suite };
    }
    case 'cluster':
      return { kind: 'cluster', file, cluster: validate(file, source, ClusterSchema) };
    default:
      throw new SpecError([
        {
          file,
          line: source.lineOf(['kind']),
          path: 'kind',
          message: `unknown kind ${JSON.stringify(kind)}`,
          fix: suggestion(String(kind), CONFIG_KINDS),
        },
      ]);
  }
}

/**
 * Every experiment a suite names must exist (relative to the suite file), lie in the suite's
 * directory or below it (a suite is installed and re-read by the nightly worker: it must not
 * reach files elsewhere, whose content a message would then show), and be a valid spec.
 */
function checkSuiteExperiments(file: string, source: YamlSource, suite: Suite): void {
  const issues = suiteIssues(file, source, suite);
  if (issues.length > 0) throw new SpecError(issues);
}

function suiteIssues(file: string, source: YamlSource, suite: Partial<Suite>): SpecIssue[] {
  const issues: SpecIssue[] = [];
  const suiteDir = realDir(dirname(file));
  const seen = new Map<string, number>();
  (suite.experiments ?? []).map(entryFile).forEach((rel, i) => {
    const absolute = resolve(dirname(file), rel);
    const path = relative(process.cwd(), absolute).startsWith('..') ? absolute : relative(process.cwd(), absolute);
    const at = { file, line: source.lineOf(['experiments', i]), path: `experiments[${i}]` };
    // A night keys its experiments by file: a second entry of one file would be submitted twice
    // and its results written over the first's.
    const first = seen.get(absolute);
    if (first !== undefined) {
      issues.push({
        ...at,
        message: `"${rel}" is listed twice (also experiments[${first}])`,
        fix: 'list each spec once; for a second configuration, copy the spec under another name',
      });
      return;
    }
    seen.set(absolute, i);
    if (!within(suiteDir, absolute)) {
      issues.push({
        ...at,
        message: `"${rel}" is outside the suite's directory ${suiteDir}; not read`,
        fix: "put the spec in the suite's directory or below it, and name it by a relative path without ..",
      });
      return;
    }
    if (!existsSync(path)) {
      issues.push({
        ...at,
        message: `no such file "${rel}" (looked for ${path})`,
        fix: 'paths are relative to the suite file',
      });
      return;
    }
    if (!within(suiteDir, realpathSync(path))) {
      issues.push({
        ...at,
        message: `"${rel}" is a link to a file outside the suite's directory ${suiteDir}; not read`,
        fix: "copy the spec into the suite's directory",
      });
      return;
    }
    try {
      // An experiment only: a suite naming a suite (itself, say) would be read forever.
      parseConfigText(path, readSpecFile(path), 'experiment');
    } catch (err) {
      if (!(err instanceof SpecError)) throw err;
      issues.push({ ...at, message: `"${rel}" is not a valid spec (its problems follow)` }, ...err.issues);
    }
  });
  issues.push(...alertFileIssues(file, source, suite));
  return issues;
}

/** alerts.file where orch serve may write it (jobs/alert-place.ts), as `orch nightly install` resolves it. */
function alertFileIssues(file: string, source: YamlSource, suite: Partial<Suite>): SpecIssue[] {
  const alert = suite.alerts?.file;
  if (alert === undefined || alert === '-') return [];
  const resultsRoot = resolve(dirname(file), suite.results ?? 'results');
  const problem = alertFileProblem(resolve(dirname(file), alert), alertRoots(resultsRoot));
  if (problem === null) return [];
  return [
    {
      file,
      line: source.lineOf(['alerts', 'file']),
      path: 'alerts.file',
      message: problem,
      fix: `put it under the results directory (e.g. ${suite.results ?? 'results'}/alerts.jsonl), or under a directory orch serve names in ${ALERT_DIR_ENV}, or use - for orch serve's stdout`,
    },
  ];
}

/** The directory with its links resolved (the suite's own directory exists: the suite was read from it). */
function realDir(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return resolve(dir);
  }
}

function within(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
}

/**
 * The parsed config, or every issue: the schema's, and those `later` finds in what is left once
 * the schema's are taken out (jobs/salvage-parse.ts), so all problems of a file come at once.
 */
function validate<S extends z.ZodType, L extends z.ZodType = S>(
  file: string,
  source: YamlSource,
  schema: S,
  later?: { schema: L; check: (salvaged: z.infer<L>, cut: PathSegment[][]) => SpecIssue[] },
): z.infer<S> {
  const result = schema.safeParse(source.data);
  if (result.success) return result.data;
  const issues = zodIssuesToSpecIssues(file, source, result.error);
  const salvaged = later ? salvageParse(later.schema, source.data, result.error) : null;
  if (later && salvaged) issues.push(...later.check(salvaged.data, salvaged.cut));
  throw new SpecError(sortIssues(issues));
}

function toIssue(file: string, source: YamlSource, p: CompileProblem): SpecIssue {
  return {
    file,
    line: source.lineOf(p.path),
    path: formatPath(p.path),
    message: p.message,
    ...(p.fix ? { fix: p.fix } : {}),
  };
}

/** A SpecIssue's dotted path (`experiments[2].spec`) as segments, to compare with what was cut. */
function pathOf(dotted: string): PathSegment[] {
  return dotted
    .split(/\.|\[(\d+)\]/)
    .filter((s): s is string => s !== undefined && s !== '')
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

function sortIssues(issues: SpecIssue[]): SpecIssue[] {
  return [...issues].sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
}
