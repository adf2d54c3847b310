/**
 * Bad input never vanishes and never becomes NaN: fewer than two reps per arm, an arm with no
 * committed reps, NaN / negative / missing timings, duplicates and strays each leave a clear
 * reason in the analysis and in every rendering.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UserInputError } from '../../jobs/errors.ts';
import { renderCsv } from '../../orchestrator/report/render-csv.ts';
import { renderJson } from '../../orchestrator/report/render-json.ts';
import { renderMarkdown } from '../../orchestrator/report/render-markdown.ts';
import { renderPlots } from '../../orchestrator/report/render-plots.ts';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import type { Analysis, AnalysisInput } from '../../orchestrator/stats/types.ts';
import { abWithAa } from './fixtures.ts';

/** Every number anywhere in the analysis is finite (or null). */
function assertFinite(x: unknown, path: string): void {
  if (typeof x === 'number') assert.ok(Number.isFinite(x), `${path} = ${x}`);
  else if (Array.isArray(x)) for (const [i, v] of x.entries()) assertFinite(v, `${path}[${i}]`);
  else if (x !== null && typeof x === 'object') for (const [k, v] of Object.entries(x)) assertFinite(v, `${path}.${k}`);
}

/**
 * Every rendering of `a` is free of NaN, undefined and Infinity in its tables and plots (the
 * issue list may quote a bad timing verbatim); returns the Markdown.
 */
function renderedClean(a: Analysis): string {
  assertFinite(a, 'analysis');
  const md = renderMarkdown(a);
  const tables = md.split('\n').filter((l) => l.startsWith('|') || !l.startsWith('- '));
  const json = JSON.parse(renderJson(a)) as Analysis;
  assertFinite(json, 'json');
  for (const t of [tables.join('\n'), ...Object.values(renderCsv(a)), ...Object.values(renderPlots(a))]) {
    assert.doesNotMatch(t, /NaN|undefined|Infinity/, t.slice(0, 400));
  }
  return md;
}

function firstLines(md: string, n: number): string {
  return md.split('\n').slice(0, n).join('\n');
}

const repOf = (input: AnalysisInput, block: number, arm: string, rep: number) =>
  input.reps.find((r) => r.block === block && r.arm === arm && r.rep === rep)!;

test('a NaN, a negative and an empty timing each exclude their rep with a reason', () => {
  const input = abWithAa(21);
  repOf(input, 0, 'B', 1).step_ms[2] = Number.NaN;
  repOf(input, 1, 'B', 0).step_ms[0] = -3;
  repOf(input, 2, 'A', 2).step_ms = [];
  const a = analyzeExperiment(input);
  assert.ok(
    a.issues.includes('rep 0/B/1 not used: step_ms[2] of 5 is NaN (timings must be finite and > 0)'),
    a.issues.join('\n'),
  );
  assert.ok(a.issues.includes('rep 1/B/0 not used: step_ms[0] of 5 is -3 (timings must be finite and > 0)'));
  assert.ok(a.issues.includes('rep 2/A/2 not used: has no measured steps'));
  const B = a.arms.find((s) => s.arm === 'B')!;
  assert.equal(B.n, B.planned - 2);
  assert.equal(B.missing, 2);
  assert.equal(
    a.gates.find((g) => g.name === 'input')!.message,
    `${3 * 12 - 3} of ${3 * 12} planned reps used (see issues)`,
  );
  // the A/A gate passed, so A is pooled with its twin A_aa per pair: A's lost rep 2/A/2 is
  // covered by A_aa's, and only B's two losses cost a pair
  assert.equal(a.reference?.kind, 'pooled');
  const c = a.primary!;
  assert.equal(c.pairs, 12 - 2);
  assert.equal(c.unpaired.length, 2);
  assert.notEqual(a.verdict, 'invalid');
  const md = renderedClean(a);
  assert.match(md, /rep 0\/B\/1 not used: step_ms\\\[2\\\] of 5 is NaN/);
});

test('an arm with no committed reps makes the experiment invalid, naming failed and missing reps', () => {
  const input = abWithAa(22);
  input.reps = input.reps.filter((r) => r.arm !== 'B');
  input.failed = [{ block: 0, arm: 'B', rep: 0, position: 1, reason: 'graphrt exited 134 (SIGABRT) on rank 0' }];
  const a = analyzeExperiment(input);
  assert.equal(a.verdict, 'invalid');
  assert.match(a.invalid_reasons[0]!, /^arm B has no usable rep \(12 planned, 12 failed or rejected\)/);
  assert.ok(a.issues.includes('rep 0/B/0 failed: graphrt exited 134 (SIGABRT) on rank 0'));
  assert.ok(a.issues.includes('rep 3/B/2 never arrived (neither committed nor failed)'));
  const B = a.arms.find((s) => s.arm === 'B')!;
  assert.deepEqual([B.n, B.mean, B.sem, B.ci, B.cv], [0, null, null, null, null]);
  const md = renderedClean(a);
  assert.match(firstLines(md, 5), /arm B has no usable rep/);
  assert.match(md, /\| B \| 0 \| 12 \| 12 \| — \|/);
});

test('fewer than two reps of an arm: invalid, with the count, never a NaN standard error', () => {
  const input = abWithAa(23);
  const keep = repOf(input, 1, 'B', 1);
  input.reps = input.reps.filter((r) => r.arm !== 'B' || r === keep);
  const a = analyzeExperiment(input);
  assert.equal(a.verdict, 'invalid');
  assert.match(a.invalid_reasons[0]!, /arm B has 1 usable rep of 12 planned — at least 2 per arm are needed/);
  assert.equal(a.primary!.verdict, 'invalid');
  assert.match(a.primary!.reasons.join('\n'), /B vs A: 1 usable pair; at least 2 are needed for a standard error/);
  const B = a.arms.find((s) => s.arm === 'B')!;
  assert.equal(B.n, 1);
  assert.equal(B.sem, null);
  renderedClean(a);
});

test('a rep committed twice counts once (the later epoch); a stray result is named', () => {
  const input = abWithAa(24);
  const first = repOf(input, 0, 'A', 0);
  const later = { ...first, epoch: 7, attempt: 2, step_ms: first.step_ms.map((x) => x * 1.001) };
  input.reps.push(later, { ...first, arm: 'C' });
  const a = analyzeExperiment(input);
  assert.ok(a.issues.includes('rep 0/A/0 was committed twice (epochs 1 and 7); the later epoch 7 is used'));
  assert.ok(a.issues.includes('result 0/C/0 is not a rep of the plan; not used'));
  const A = a.arms.find((s) => s.arm === 'A')!;
  assert.equal(A.n, A.planned);
  const used = a.values.find((v) => v.block === 0 && v.arm === 'A' && v.rep === 0)!;
  assert.equal(used.value, [...later.step_ms].sort((x, y) => x - y)[2]);
  renderedClean(a);
});

test('invalid options are a UserInputError, not a silent default', () => {
  assert.throws(
    () => analyzeExperiment(abWithAa(25, {}, { alpha: 0 })),
    (e: unknown) => e instanceof UserInputError && /alpha must be in \(0, 1\), got 0/.test(e.message),
  );
  const input = abWithAa(25);
  input.plan = { ...input.plan, control: 'Z' };
  assert.throws(() => analyzeExperiment(input), /control arm "Z" is not an arm of the plan/);
});
