/**
 * `orch report --format junit|github` from analyses with planted outcomes (test/stats/fixtures.ts
 * simulations): the JUnit file is parsed by a strict XML parser (test/utils/parse-xml.ts) and
 * its tree checked — one testcase per gate, comparison and the outcome, a <failure> exactly where
 * --fail-on makes one, its message the change, CI and p the analysis computed — and the GitHub
 * annotations are read back as workflow commands.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { changeWithCi } from '../../orchestrator/report/ci-cases.ts';
import { DEFAULT_FAIL_ON_SET, type FailOnSet } from '../../orchestrator/report/outcome-exit-code.ts';
import { githubAnnotations, githubSummary } from '../../orchestrator/report/render-github.ts';
import { renderJunit } from '../../orchestrator/report/render-junit.ts';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import type { Analysis } from '../../orchestrator/stats/types.ts';
import { abWithAa } from '../stats/fixtures.ts';
import { parseXml, type XmlNode } from '../utils/parse-xml.ts';

const slowerArms = {
  arms: [
    { name: 'A', mu: 40, toggles: {} },
    { name: 'B', mu: 41.6, toggles: {} },
  ],
};
const flatArms = {
  arms: [
    { name: 'A', mu: 40, toggles: {} },
    { name: 'B', mu: 40, toggles: {} },
  ],
};

function junitOf(a: Analysis, failOn: FailOnSet): { suite: XmlNode; cases: Map<string, XmlNode> } {
  const root = parseXml(renderJunit([a], failOn));
  assert.equal(root.tag, 'testsuites');
  assert.equal(root.children.length, 1);
  const suite = root.children[0]!;
  assert.equal(suite.tag, 'testsuite');
  assert.equal(suite.attrs.name, a.experiment);
  assert.ok(suite.children.every((c) => c.tag === 'testcase' && c.children.length <= 1));
  // the counts CI systems show are the elements themselves
  const count = (tag: string) => suite.children.filter((c) => c.children[0]?.tag === tag).length;
  assert.deepEqual([suite.attrs.tests, suite.attrs.failures, suite.attrs.errors, suite.attrs.skipped].map(Number), [
    suite.children.length,
    count('failure'),
    count('error'),
    count('skipped'),
  ]);
  assert.deepEqual([root.attrs.tests, root.attrs.failures], [suite.attrs.tests, suite.attrs.failures]);
  return { suite, cases: new Map(suite.children.map((c) => [c.attrs.name!, c])) };
}

test('junit: a planted regression fails its comparison and the outcome; the message is the change, CI and p', () => {
  const a = analyzeExperiment(abWithAa(65, slowerArms));
  assert.equal(a.verdict, 'slower');
  const { cases } = junitOf(a, DEFAULT_FAIL_ON_SET);
  const names = [...a.gates.map((g) => `gate ${g.name}`), 'B vs A', `outcome of ${a.experiment}`];
  assert.deepEqual(
    [...cases.keys()].sort(),
    names.sort(),
    'one testcase per gate, per comparison (the A/A is its gate) and the outcome',
  );
  const failure = cases.get('B vs A')!.children[0]!;
  assert.equal(failure.tag, 'failure');
  assert.equal(failure.attrs.message, `slower: change ${changeWithCi(a.primary!)}`);
  assert.match(failure.attrs.message!, /change \+\d+\.\d+ % \(CI \+\d+\.\d+ % to \+\d+\.\d+ %, p /);
  assert.match(failure.text, new RegExp(a.primary!.statement.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  assert.equal(cases.get(`outcome of ${a.experiment}`)!.children[0]?.tag, 'failure');
  // --fail-on without slower: the same regression passes (and stays a warning on GitHub)
  const lenient = junitOf(a, new Set(['invalid']));
  assert.equal(lenient.suite.attrs.failures, '0');
  assert.match(githubAnnotations(a, new Set(['invalid'])), /^::warning title=orch [^:]+%3A B vs A::slower: change /m);
});

test('junit: a failed gate fails when --fail-on has invalid; an inconclusive result passes by default', () => {
  const invalid = analyzeExperiment(
    abWithAa(65, {}, { gates: [{ block: 0, arm: 'B', name: 'identity', pass: false, first_bad_replay: 4 }] }),
  );
  const gate = junitOf(invalid, DEFAULT_FAIL_ON_SET).cases.get('gate identity')!;
  assert.equal(gate.children[0]?.tag, 'failure');
  assert.equal(gate.children[0]?.text, invalid.gates.find((g) => g.name === 'identity')!.message);
  const flat = analyzeExperiment(abWithAa(65, flatArms));
  assert.equal(flat.verdict, 'inconclusive');
  assert.equal(junitOf(flat, DEFAULT_FAIL_ON_SET).suite.attrs.failures, '0');
  assert.equal(junitOf(flat, new Set(['inconclusive'])).cases.get('B vs A')!.children[0]?.tag, 'failure');
});

test('junit: a cancelled experiment is an error with its reason; its comparisons of partial data are skipped', () => {
  const a = analyzeExperiment({
    ...abWithAa(65, slowerArms),
    experiment: 'x<&"y\'>',
    stopped: { state: 'cancelled', reason: 'cancelled by orch cancel (ci & "test")', user_input: false },
  });
  const { suite, cases } = junitOf(a, new Set());
  assert.equal(suite.attrs.name, 'x<&"y\'>', 'the specials survive the escape');
  const outcome = cases.get(`outcome of ${a.experiment}`)!.children[0]!;
  assert.equal(outcome.tag, 'error');
  assert.match(outcome.text, /cancelled by orch cancel \(ci & "test"\)/);
  const cmp = cases.get('B vs A')!.children[0]!;
  assert.equal(cmp.tag, 'skipped');
  assert.match(cmp.attrs.message!, /^partial data \(experiment cancelled\), no verdict: change /);
});

test('github: one workflow command per case, data escaped, the summary a table of the cases', () => {
  const a = analyzeExperiment(abWithAa(65, slowerArms));
  const lines = githubAnnotations(a, DEFAULT_FAIL_ON_SET).trimEnd().split('\n');
  assert.equal(lines.length, a.gates.length + 2);
  for (const l of lines) assert.match(l, /^::(error|warning|notice) title=[^:\n]+::[^\n]+$/, l);
  // a percent sign in the data would start an escape: it is written %25
  assert.ok(lines.every((l) => !/ %(?!25|0A|0D|3A|2C)/.test(l.split('::').slice(2).join('::'))));
  assert.ok(lines.some((l) => l.startsWith('::error title=') && l.includes('B vs A')));
  const summary = githubSummary(a, DEFAULT_FAIL_ON_SET);
  assert.match(summary, new RegExp(`^### orch ${a.experiment}: SLOWER$`, 'm'));
  assert.match(summary, /^\| B vs A \| ❌ failed \| slower: change /m);
});
