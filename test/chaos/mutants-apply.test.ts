/**
 * Every patch of test/mutants/ still applies to the tree (`git apply --check`): a reformat or a
 * move of the code a mutant removes a fix from turns its row into "does not apply", which the
 * full mutation check (mutants.test.ts, minutes) reports only at its end. This says it in a second.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

const inGit = spawnSync('git', ['rev-parse', '--verify', 'HEAD'], { encoding: 'utf8' }).status === 0;

test('every mutant of test/mutants applies to the tree', { skip: !inGit && 'not a git checkout' }, () => {
  const patches = readdirSync('test/mutants').filter((f) => f.endsWith('.patch'));
  assert.ok(patches.length > 0, 'test/mutants holds no patch');
  const stale = patches.filter(
    (f) => spawnSync('git', ['apply', '--check', join('test/mutants', f)], { encoding: 'utf8' }).status !== 0,
  );
  assert.deepEqual(stale, [], 'patches that no longer apply: make each again against the code as it is now');
});
