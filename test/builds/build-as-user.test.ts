/**
 * A root worker's builds run as its run-as user (worker/builds/build-as-user.ts): a build of a
 * commit, in the worktree the worker lends that user, compiles as the user, cannot read a 0600
 * file of the worker's nor write a file the worktree shares by a hard link with one elsewhere,
 * and leaves artifacts and worktree the worker's own again, worktrees/ closed, with no set-id bit;
 * its key's toolchain commands run as the user as well.
 * A checkout the user cannot enter is refused before anything runs, naming the closed directory.
 */
import assert from 'node:assert/strict';
import { chmodSync, linkSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { BuildCache } from '../../worker/builds/build-cache.ts';
import { shareBuildRoot } from '../../worker/builds/build-cache-sharing.ts';
import { ensureCommitBuild, ensureWorktree } from '../../worker/builds/commit-build.ts';
import { type RunAs, resolveRunAs } from '../../worker/run-as.ts';
import { plantedRepo } from './planted-repo.ts';

const root = process.getuid?.() === 0;
const skip = !root && 'not root: only root can switch to a second local user (useradd, setpriv)';
const KEY = { git: true, dirty_diff: false, flags: [], toolchain: [] };

/** The run-as user, a directory others may pass, and a build cache in it shared with that user. */
function sharedCache(): { runAs: RunAs; d: string; buildRoot: string; cache: BuildCache } {
  const runAs = resolveRunAs('orch-test-run', { create: true, log: () => {} });
  const d = mkdtempSync(join(tmpdir(), 'orch-build-as-'));
  chmodSync(d, 0o755);
  const buildRoot = join(d, 'builds');
  shareBuildRoot(buildRoot, runAs);
  return { runAs, d, buildRoot, cache: new BuildCache({ root: buildRoot, runAs }) };
}

describe('builds as the run-as user', () => {
  test('a commit builds as the run-as user in its lent worktree; the worker takes back the worktree and owns the artifacts', {
    skip,
    timeout: 120_000,
  }, async () => {
    const { runAs, d, buildRoot, cache } = sharedCache();
    const secret = join(d, 'cluster-secret');
    writeFileSync(secret, 'secret-planted-0b1d\n', { mode: 0o600 });
    const shared = join(d, 'shared-inode');
    writeFileSync(shared, "the worker's\n", { mode: 0o644 });
    const repo = plantedRepo();
    const commit = repo.git('rev-parse', 'main');
    // a file of the worktree that is also a file elsewhere: lending must not hand it out
    const worktree = await ensureWorktree(buildRoot, repo.dir, commit, 'main');
    linkSync(shared, join(worktree, 'linked'));
    const cmd = [
      'sh build.sh >/dev/null',
      'id -u > out/uid',
      `if cat ${secret} >/dev/null 2>&1; then echo secret-read; else echo secret-refused; fi >> out/uid`,
      'if echo tampered >> linked 2>/dev/null; then echo linked-written; else echo linked-refused; fi >> out/uid',
      'echo x > "$ORCH_BUILD_OUT/setid"; chmod 4755 "$ORCH_BUILD_OUT/setid"',
    ].join('; ');
    // a toolchain command of the key is the spec's too: it runs as the user (in /: the worktree is not lent yet)
    const open = join(d, 'open');
    mkdirSync(open, { mode: 0o777 });
    chmodSync(open, 0o777);
    const toolchain = [`id -u > ${open}/toolchain; pwd >> ${open}/toolchain`];
    const b = await ensureCommitBuild(cache, {
      name: 'main',
      ref: 'main',
      commit,
      repo: repo.dir,
      build: { cmd, artifacts: ['out/work', 'out/uid', 'setid'], key: { ...KEY, toolchain } },
    });
    assert.deepEqual(readFileSync(join(open, 'toolchain'), 'utf8').trim().split('\n'), [String(runAs.uid), '/']);
    assert.equal(b.outcome, 'built');
    assert.deepEqual(readFileSync(join(b.dir, 'out/uid'), 'utf8').trim().split('\n'), [
      String(runAs.uid),
      'secret-refused',
      'linked-refused',
    ]);
    assert.equal(readFileSync(shared, 'utf8'), "the worker's\n");
    for (const f of ['out/work', 'out/uid', 'setid']) {
      const st = statSync(join(b.dir, f));
      assert.equal(st.uid, 0, `artifact ${f} is the worker's`);
      assert.equal(st.mode & 0o7000, 0, `artifact ${f} has no set-id bit`);
    }
    assert.equal(statSync(join(worktree, 'out', 'work')).uid, 0, 'the worktree was taken back');
    assert.equal(statSync(worktree).uid, 0);
    assert.equal(statSync(join(buildRoot, 'worktrees')).mode & 0o777, 0o700, 'worktrees/ closed again');
  });

  test('a checkout the run-as user cannot enter: refused before the build, naming the directory', {
    skip,
    timeout: 60_000,
  }, async () => {
    const { d, cache } = sharedCache();
    const closed = join(d, 'closed');
    mkdirSync(join(closed, 'src'), { recursive: true, mode: 0o700 });
    chmodSync(closed, 0o700);
    await assert.rejects(
      cache.ensure({
        build: {
          cmd: 'touch built',
          artifacts: ['built'],
          dir: join(closed, 'src'),
          key: { git: false, dirty_diff: false, flags: [], toolchain: [] },
        },
      }),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'RUN_AS_UNREACHABLE');
        assert.match(
          err.message,
          new RegExp(
            `workload\\.build\\.dir: the build would run in ${join(closed, 'src')}, but orch-test-run, .* cannot enter ${closed} \\(mode 0700`,
          ),
        );
        return true;
      },
    );
  });
});
