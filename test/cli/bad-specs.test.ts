/**
 * Every malformed spec in test/fixtures/bad-specs/ is rejected through the real CLI with its
 * own message (the fixture's first line: `# expect: <what follows the file name>`), exit 2,
 * and no stack trace. All fixtures go through one `orch validate` process (plus one --json
 * run that reports each file's verdict), and a few alone to see each exits 2 by itself.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runOrch, STACK_FRAME } from './run-orch.ts';

const DIR = 'test/fixtures/bad-specs';
const fixtures = readdirSync(DIR)
  .filter((f) => f.endsWith('.yaml'))
  .sort()
  .map((name) => {
    const file = join(DIR, name);
    const first = readFileSync(file, 'utf8').split('\n')[0] ?? '';
    const expect = /^# expect: (.*)$/.exec(first)?.[1];
    if (expect === undefined) throw new Error(`${file}: first line must be "# expect: <message fragment>"`);
    return { file, expect };
  });

describe('bad specs through `orch validate`', () => {
  it('has at least 30 fixtures, each with its own message', () => {
    assert.ok(fixtures.length >= 30, `${fixtures.length} fixtures`);
    assert.equal(new Set(fixtures.map((f) => f.expect)).size, fixtures.length, 'two fixtures expect the same message');
  });

  it('all at once: exit 2, every file reported at its line with its message, no stack', () => {
    const r = runOrch(['validate', ...fixtures.map((f) => f.file)]);
    assert.equal(r.status, 2, r.stderr);
    assert.doesNotMatch(r.stderr, STACK_FRAME);
    assert.equal(r.stdout, '', 'no fixture may validate');
    const lines = r.stderr.split('\n');
    for (const { file, expect } of fixtures) {
      assert.ok(lines.some((l) => l.startsWith(`${file}${expect}`)), `${file}: no line "${file}${expect}" in\n${lines.filter((l) => l.startsWith(file)).join('\n')}`);
    }
    assert.match(r.stderr, new RegExp(`problems in ${fixtures.length} files`));
  });

  it('--json: every file is reported invalid with its issues', () => {
    const r = runOrch(['validate', '--json', ...fixtures.map((f) => f.file)]);
    assert.equal(r.status, 2);
    const out = JSON.parse(r.stdout) as { ok: boolean; files: { file: string; ok: boolean; issues: unknown[] }[] };
    assert.equal(out.ok, false);
    assert.deepEqual(out.files.map((f) => f.file), fixtures.map((f) => f.file));
    for (const f of out.files) assert.ok(!f.ok && f.issues.length > 0, f.file);
  });

  for (const name of ['yaml-syntax.yaml', 'unknown-toggle.yaml', 'command-no-metric.yaml']) {
    it(`alone: ${name} exits 2`, () => {
      const fixture = fixtures.find((f) => f.file.endsWith(name));
      assert.ok(fixture);
      const r = runOrch(['validate', fixture.file]);
      assert.equal(r.status, 2);
      assert.ok(r.stderr.startsWith(`${fixture.file}${fixture.expect}\n`), r.stderr);
      assert.doesNotMatch(r.stderr, STACK_FRAME);
    });
  }
});
