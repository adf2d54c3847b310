/**
 * `orch validate` reports every problem of a file in one run: a schema problem (a mistyped value,
 * an unknown key) no longer hides the compile stage's (a misspelt toggle, a sequential
 * leave-one-out) nor a suite's entries (jobs/salvage-parse.ts), and a value taken out to look
 * further is never reported twice.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runOrch } from '../cli/run-orch.ts';

const dir = mkdtempSync(join(tmpdir(), 'orch-all-problems-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function validate(name: string, text: string): string[] {
  const file = join(dir, name);
  writeFileSync(file, text);
  const r = runOrch(['validate', file]);
  assert.equal(r.status, 2, r.stderr);
  return r.stderr
    .split('\n')
    .filter((l) => l.startsWith(file))
    .map((l) => l.slice(file.length));
}

describe('all problems of a file at once', () => {
  it('a spec with two typos of different stages reports both, each once', () => {
    const lines = validate(
      'two-typos.yaml',
      [
        'name: two',
        'design: leave-one-out',
        'workload: { runtime: native, kind: decode }',
        'toggles: [graph, pld]',
        'reps: three',
        'blocks: { cuont: 2 }',
        '',
      ].join('\n'),
    );
    assert.deepEqual(lines, [
      ':4 toggles[1]: unknown toggle "pld" — did you mean "pdl"?',
      ':5 reps: expected a number, got the string "three"',
      ':6 blocks.cuont: unknown key "cuont" — did you mean "count"?',
    ]);
  });

  it('a sequential leave-one-out with a misspelt key: both', () => {
    const lines = validate(
      'seq-loo.yaml',
      [
        'name: two',
        'design: leave-one-out',
        'workload: { runtime: native, kind: decode }',
        'toggles: [graph, pdl]',
        'stopping: { rule: sequential, max_blocks: 6, loks: 2 }',
        '',
      ].join('\n'),
    );
    assert.equal(lines.length, 2, lines.join('\n'));
    assert.match(lines[0]!, /^:5 stopping\.loks: unknown key "loks"/);
    assert.match(lines[1]!, /^:5 stopping\.rule: sequential stopping decides one comparison/);
  });

  it('a suite with an impossible cron date, a duplicate entry and an alert file under /etc: all three', () => {
    const lines = validate(
      'suite.yaml',
      [
        'kind: suite',
        'name: s',
        'schedule: { cron: "0 0 30 2 *" }',
        'experiments: [a.yaml, a.yaml]',
        'alerts: { file: /etc/cron.d/orch }',
        '',
      ].join('\n'),
    );
    assert.equal(lines.length, 4, lines.join('\n'));
    assert.match(lines[0]!, /^:3 schedule\.cron: day of month 30 never occurs in month 2/);
    assert.match(lines[1]!, /^:4 experiments\[0\]: no such file "a\.yaml"/);
    assert.match(lines[2]!, /^:4 experiments\[1\]: "a\.yaml" is listed twice \(also experiments\[0\]\)/);
    assert.match(lines[3]!, /^:5 alerts\.file: alert file \/etc\/cron\.d\/orch is outside the results root/);
  });

  it('an alert file under the results directory is accepted', () => {
    writeFileSync(
      join(dir, 'ok-spec.yaml'),
      [
        'name: ok',
        'design: leave-one-out',
        'workload: { runtime: native, kind: decode }',
        'toggles: [graph, pdl]',
        '',
      ].join('\n'),
    );
    const file = join(dir, 'ok-suite.yaml');
    writeFileSync(
      file,
      [
        'kind: suite',
        'name: s',
        'schedule: { cron: "0 2 * * *" }',
        'experiments: [ok-spec.yaml]',
        'alerts: { file: results/alerts.jsonl }',
        '',
      ].join('\n'),
    );
    const r = runOrch(['validate', file]);
    assert.equal(r.status, 0, r.stderr);
  });
});
