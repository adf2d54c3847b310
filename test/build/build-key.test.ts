/**
 * The build key (worker/builds/build-key.ts) on a real git checkout: each input it claims to
 * hash changes it, and nothing else does (an ignored build output must not, or every build
 * would change its own key).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { UserInputError } from '../../jobs/errors.ts';
import { type BuildKeyInput, computeBuildKey } from '../../worker/builds/build-key.ts';
import { gitCheckout } from './build-helpers.ts';

const input = (dir: string, over: Partial<BuildKeyInput['key']> = {}, cmd = 'sh build.sh'): BuildKeyInput => ({
  cmd,
  artifacts: ['out/speedy'],
  key: { git: true, dirty_diff: true, flags: ['-O2'], toolchain: ['g++ --version'], ...over },
  dir,
});

const git = (dir: string, ...args: string[]) =>
  spawnSync('git', ['-c', 'user.email=t@orch', '-c', 'user.name=t', ...args], { cwd: dir });

describe('build key', () => {
  test('same inputs give the same key; each hashed input changes it', async () => {
    const dir = gitCheckout('cmd-speedy');
    const k0 = await computeBuildKey(input(dir));
    assert.equal((await computeBuildKey(input(dir))).key, k0.key);
    assert.match(k0.key, /^[0-9a-f]{64}$/);
    assert.equal(k0.parts.diff_sha256, null, 'a clean tree');

    // A build output under .gitignore (out/) is not part of the key.
    mkdirSync(join(dir, 'out'), { recursive: true });
    writeFileSync(join(dir, 'out', 'speedy'), 'binary');
    assert.equal((await computeBuildKey(input(dir))).key, k0.key);

    const keys = new Set([k0.key]);
    const add = (k: string, what: string) => {
      assert.ok(!keys.has(k), `${what} changes the key`);
      keys.add(k);
    };
    add((await computeBuildKey(input(dir, { flags: ['-O3'] }))).key, 'a flag');
    add((await computeBuildKey(input(dir, { toolchain: ['echo clang 17'] }))).key, 'the toolchain output');
    add((await computeBuildKey(input(dir, {}, 'sh build.sh --lto'))).key, 'the build command');

    appendFileSync(join(dir, 'speedy.cpp'), '\n// an uncommitted edit\n');
    const dirty = await computeBuildKey(input(dir));
    add(dirty.key, 'an uncommitted diff');
    assert.notEqual(dirty.parts.diff_sha256, null);
    writeFileSync(join(dir, 'extra.h'), '#define X 1\n');
    add((await computeBuildKey(input(dir))).key, 'an untracked file');

    git(dir, 'add', '-A');
    git(dir, 'commit', '-qm', 'edit');
    const committed = await computeBuildKey(input(dir));
    add(committed.key, 'a new commit');
    assert.equal(committed.parts.diff_sha256, null);
    // Without dirty_diff, an edit does not change the key (the user asked for commit-only keys).
    appendFileSync(join(dir, 'speedy.cpp'), '\n// another edit\n');
    assert.equal(
      (await computeBuildKey(input(dir, { dirty_diff: false }))).key,
      (await computeBuildKey(input(dir, { dirty_diff: false }))).key,
    );
    assert.notEqual(
      (await computeBuildKey(input(dir, { dirty_diff: false }))).key,
      (await computeBuildKey(input(dir))).key,
    );
    // The recipe (cmd, artifacts, flags) is shared by similar builds across commits.
    assert.equal(committed.recipe, k0.recipe);
  });

  test('a build dir that is not a git checkout, and a failing toolchain command, are errors naming the spec path', async () => {
    await assert.rejects(
      computeBuildKey(input('/tmp')),
      (e: unknown) =>
        e instanceof UserInputError &&
        e.code === 'BUILD_NOT_GIT' &&
        e.message.startsWith('workload.build.key.git: /tmp is not a git checkout'),
    );
    // a dir that does not exist is named as such, not as git's exit 127
    await assert.rejects(
      computeBuildKey(input('/nonexistent/orch-build-dir')),
      (e: unknown) =>
        e instanceof UserInputError &&
        e.code === 'BUILD_DIR_MISSING' &&
        e.message === 'workload.build.dir: /nonexistent/orch-build-dir is not a directory on this host (ENOENT)',
    );
    const dir = gitCheckout('cmd-speedy');
    await assert.rejects(
      computeBuildKey(input(dir, { toolchain: ['g++ --version', 'nvcc-missing --version'] })),
      (e: unknown) =>
        e instanceof UserInputError &&
        /^workload\.build\.key\.toolchain\[1\]: "nvcc-missing --version" exited 127/.test(e.message),
    );
  });
});
