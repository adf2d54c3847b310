/**
 * `orch report --format junit`: the CI cases of one experiment (ci-cases.ts) as a JUnit XML file,
 * the shape CI systems read (Jenkins, GitLab, GitHub test reporters): one <testsuite> per
 * experiment, one <testcase> per gate, comparison and outcome, a <failure> for each that
 * --fail-on makes a failure (the message carries the change, its CI and p), <skipped> for a gate
 * that did not apply or a comparison of partial data, <error> for an experiment that ended early.
 */
import type { Analysis } from '../stats/types.ts';
import { type CiCase, ciCases } from './ci-cases.ts';
import type { FailOnSet } from './outcome-exit-code.ts';

/** Text as XML 1.0 attribute or character data: the five specials escaped, characters XML cannot hold dropped. */
function xml(s: string): string {
  return s
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

function testcase(c: CiCase, suite: string): string {
  const open = `    <testcase classname="${xml(`${suite}.${c.group}`)}" name="${xml(c.name)}"`;
  if (c.status === 'passed') return `${open}/>`;
  const tag = c.status === 'failed' ? 'failure' : c.status;
  const type = c.status === 'failed' ? ` type="${xml(c.group === 'gates' ? 'gate' : 'verdict')}"` : '';
  return `${open}>\n      <${tag} message="${xml(c.message)}"${type}>${xml(c.detail)}</${tag}>\n    </testcase>`;
}

function testsuite(a: Analysis, cases: readonly CiCase[]): string {
  return [
    `  <testsuite name="${xml(a.experiment)}" ${counts(cases)}>`,
    ...cases.map((c) => testcase(c, a.experiment)),
    '  </testsuite>',
  ].join('\n');
}

/** The tests, failures, errors and skipped attributes of these cases. */
function counts(cases: readonly CiCase[]): string {
  const n = (s: CiCase['status']) => cases.filter((c) => c.status === s).length;
  return `tests="${cases.length}" failures="${n('failed')}" errors="${n('error')}" skipped="${n('skipped')}"`;
}

export function renderJunit(analyses: readonly Analysis[], failOn: FailOnSet): string {
  const suites = analyses.map((a) => ({ a, cases: ciCases(a, failOn) }));
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="orch" ${counts(suites.flatMap((s) => s.cases))}>`,
    ...suites.map((s) => testsuite(s.a, s.cases)),
    '</testsuites>',
    '',
  ].join('\n');
}
