/**
 * A build opened to the run-as user's group (worker/builds/build-cache-sharing.ts), on a real
 * tree: owner-only files and directories become group-readable (and group-executable where the
 * owner may execute), a group- or world-writable file loses those bits, a setuid binary its
 * setuid bit; a hard link to a file outside the build and a symbolic link are left as they are,
 * so the file outside keeps its own group and mode. A build already of the group is not walked.
 */
import assert from 'node:assert/strict';
import { chmodSync, linkSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { shareArtifacts } from '../../worker/builds/build-cache-sharing.ts';
import { resolveRunAs } from '../../worker/run-as.ts';

const top = mkdtempSync(join(tmpdir(), 'orch-share-'));
after(() => rmSync(top, { recursive: true, force: true }));

test("a build's artifacts opened read-only to the run-as group; links and the files behind them untouched", {
  skip: process.getuid?.() !== 0 && 'not root: only root can give a file to another group',
}, () => {
  const runAs = resolveRunAs('orch-test-run', { create: true, log: () => {} });
  const outside = join(top, 'outside-secret');
  writeFileSync(outside, 's', { mode: 0o600 });
  const build = join(top, 'artifacts', 'key');
  mkdirSync(join(build, 'lib'), { recursive: true, mode: 0o700 });
  const file = (name: string, mode: number) => {
    writeFileSync(join(build, name), name);
    chmodSync(join(build, name), mode);
  };
  file('prog', 0o700);
  file('data', 0o600);
  file('lib/shared', 0o666);
  file('setuid', 0o4755);
  linkSync(outside, join(build, 'hardlink'));
  symlinkSync(outside, join(build, 'symlink'));
  chmodSync(build, 0o700);

  shareArtifacts(build, runAs);
  const mode = (p: string) => statSync(join(build, p)).mode & 0o7777;
  const group = (p: string) => statSync(join(build, p)).gid;
  assert.deepEqual(
    ['', 'lib', 'prog', 'data', 'lib/shared', 'setuid'].map((p) => [p, mode(p).toString(8), group(p) === runAs.gid]),
    [
      ['', '750', true],
      ['lib', '750', true],
      ['prog', '750', true],
      ['data', '640', true],
      ['lib/shared', '644', true],
      ['setuid', '755', true],
    ],
  );
  assert.equal(statSync(outside).mode & 0o7777, 0o600, 'the file behind the hard and symbolic links keeps its mode');
  assert.equal(statSync(outside).gid, 0, 'and its group');

  // of the group already: not walked again (a file changed since keeps its change)
  chmodSync(join(build, 'data'), 0o600);
  shareArtifacts(build, runAs);
  assert.equal(mode('data'), 0o600);
});
