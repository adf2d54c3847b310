/**
 * A build opened to the run-as user's group (worker/builds/build-cache-sharing.ts), on a real
 * tree: owner-only files and directories become group-readable (and group-executable where the
 * owner may execute), a group- or world-writable file loses those bits, a setuid binary its
 * setuid bit; a hard link to a file outside the build and a symbolic link are left as they are,
 * so the file outside keeps its own group and mode. A build already of the group is not walked.
 * The build root: passable by the group, artifacts/ listable, the rest the worker's alone, the
 * directories made above it passable whatever the umask; one under a closed directory refused.
 */
import assert from 'node:assert/strict';
import { chmodSync, linkSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { shareArtifacts, shareBuildRoot } from '../../worker/builds/build-cache-sharing.ts';
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

test('a build root prepared for the run-as user: passable, artifacts listed, the rest private, made passable under umask 077', {
  skip: process.getuid?.() !== 0 && 'not root: only root can give a directory to another group',
}, () => {
  const runAs = resolveRunAs('orch-test-run', { create: true, log: () => {} });
  chmodSync(top, 0o755);
  const root = join(top, 'made', 'here', 'builds');
  const umask = process.umask(0o077);
  try {
    shareBuildRoot(root, runAs);
  } finally {
    process.umask(umask);
  }
  const of = (p: string) => {
    const st = statSync(join(top, p));
    return [p, (st.mode & 0o7777).toString(8), st.gid === runAs.gid ? 'G' : String(st.gid)];
  };
  assert.deepEqual(
    [
      'made',
      'made/here',
      'made/here/builds',
      'made/here/builds/artifacts',
      'made/here/builds/logs',
      'made/here/builds/.build.lock',
    ].map(of),
    [
      ['made', '755', '0'],
      ['made/here', '755', '0'],
      ['made/here/builds', '710', 'G'],
      ['made/here/builds/artifacts', '750', 'G'],
      ['made/here/builds/logs', '700', '0'],
      ['made/here/builds/.build.lock', '600', '0'],
    ],
  );

  const closed = join(top, 'closed');
  mkdirSync(closed, { mode: 0o700 });
  assert.throws(() => shareBuildRoot(join(closed, 'builds'), runAs), {
    code: 'RUN_AS_UNREACHABLE',
    message: new RegExp(
      `^--run-as orch-test-run: the build cache ${join(closed, 'builds')} lies under ${closed} \\(mode 0700, owner uid 0, group gid 0\\)`,
    ),
  });
});
