import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
// @ts-expect-error: a plain .mjs script of the repository, without declarations
import { failuresOf } from '../../scripts/tap-failures.mjs';

/** node's own TAP for a file of two failing tests and a passing one, the way npm test runs it. */
function tapOfFailingFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'orch-tap-'));
  try {
    const file = join(dir, 'planted.test.mjs');
    writeFileSync(
      file,
      [
        "import assert from 'node:assert/strict';",
        "import { describe, it } from 'node:test';",
        "describe('outer', () => {",
        "  it('fails with a message', () => assert.equal(1, 2, 'one is not two'));",
        "  it('fails deep', () => assert.deepEqual({ a: 1 }, { a: 2 }));",
        // a statistical test's misses: CI cut this one at the `+ [` that began the list
        "  it('fails with a list of misses', () => assert.deepEqual(['verdict same', 'CI -0.01..0.2 not above 0', 'estimate 0.1 of the planted 0.5'], []));",
        "  it('fails long', () => assert.equal(Array.from({ length: 60 }, (_, k) => 'line ' + k).join('\\n'), ''));",
        "  it('passes', () => {});",
        '});',
      ].join('\n'),
    );
    // NODE_TEST_CONTEXT would make the child report to this runner instead of printing its TAP
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const run = spawnSync(process.execPath, ['--test', '--test-reporter=tap', file], { encoding: 'utf8', env });
    assert.notEqual(run.status, 0, 'the planted file fails');
    return run.stdout;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('npm test names its failures again at the end (scripts/tap-failures.mjs)', () => {
  it('names each failing test with its location and its error, and no passing test', () => {
    const failures: string[] = failuresOf(tapOfFailingFile());
    const text = failures.join('\n');
    assert.match(text, /^not ok 1 - fails with a message$/m);
    assert.match(text, /^not ok 2 - fails deep$/m);
    assert.match(text, /^not ok 3 - fails with a list of misses$/m);
    assert.match(text, /^not ok 1 - outer$/m);
    assert.match(text, /one is not two/);
    assert.match(text, /Expected values to be strictly deep-equal/);
    assert.match(text, /location: '.*planted\.test\.mjs:\d+:\d+'/);
    assert.doesNotMatch(text, /passes/);
    assert.doesNotMatch(text, /stack:|duration_ms/, 'the stack and timing stay in the TAP above');
  });

  it("keeps a deep-equal's whole list of misses, and cuts a long value with a pointer to the TAP", () => {
    const text = (failuresOf(tapOfFailingFile()) as string[]).join('\n');
    for (const miss of ['verdict same', 'CI -0.01..0.2 not above 0', 'estimate 0.1 of the planted 0.5'])
      assert.ok(text.includes(`+   '${miss}'`), `${miss} in ${text}`);
    assert.match(text, /line 20/);
    assert.doesNotMatch(text, /line 59/);
    assert.match(text, /\(more lines in the TAP above\)/);
  });

  it('finds nothing in a run that passed', () => {
    assert.deepEqual(failuresOf('TAP version 13\nok 1 - fine\n  ---\n  duration_ms: 1\n  ...\n1..1\n'), []);
  });
});
