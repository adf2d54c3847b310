/**
 * The injection library where the run-as user can load it (worker/command/inject-lib-sharing.ts):
 * one inside a directory the user cannot enter (an orch checkout under /root) is copied beside the
 * build cache, once per content, and the user reads the copy; one it can read is used as it is.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { injectLibFor } from '../../worker/command/inject-lib-sharing.ts';
import { asUser, resolveRunAs } from '../../worker/run-as.ts';

test('an injection library the run-as user cannot reach is copied where it can; one it can read stays', {
  skip: process.getuid?.() !== 0 && 'not root: only root can switch to a second local user (useradd, setpriv)',
}, () => {
  const runAs = resolveRunAs('orch-test-run', { create: true, log: () => {} });
  const readAs = (file: string) => {
    const [exe, ...args] = asUser(runAs, ['/bin/cat', file]);
    return spawnSync(exe!, args, { encoding: 'utf8' });
  };
  const closed = mkdtempSync(join(tmpdir(), 'orch-checkout-'));
  chmodSync(closed, 0o700);
  const lib = join(closed, 'liborch_inject.so');
  writeFileSync(lib, 'an ELF, in a test\n', { mode: 0o755 });
  const open = mkdtempSync(join(tmpdir(), 'orch-cache-'));
  chmodSync(open, 0o755);
  const buildRoot = join(open, 'builds');
  assert.notEqual(readAs(lib).status, 0, 'the control: the user cannot read the library where it is');

  const got = injectLibFor(lib, buildRoot, runAs);
  assert.ok(got !== null && got !== lib && got.startsWith(join(open, 'lib')), `copied beside the build cache: ${got}`);
  assert.equal(readAs(got).stdout, 'an ELF, in a test\n');
  assert.equal(statSync(got).uid, 0, "the copy is the worker's");
  assert.equal(statSync(dirname(got)).mode & 0o777, 0o755);
  assert.equal(injectLibFor(lib, buildRoot, runAs), got, 'the same content, the same copy');

  const reachable = join(open, 'liborch_inject.so');
  writeFileSync(reachable, readFileSync(lib), { mode: 0o644 });
  assert.equal(injectLibFor(reachable, buildRoot, runAs), reachable);
  assert.equal(injectLibFor(lib, buildRoot, null), lib, 'no run-as user: the library where it is');
});
