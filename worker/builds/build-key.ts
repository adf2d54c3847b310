/**
 * The content address of a build: sha256 over what makes the artifact —
 * the build recipe (cmd, artifacts), the git commit of the build directory, the diff of a dirty
 * tree (tracked changes and untracked files), the spec's flags, and the output of each
 * toolchain command (`g++ --version`, `nvcc --version`). Same inputs, same key, on any host.
 */

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { UserInputError } from '../../jobs/errors.ts';
import { HARDENED_GIT_ARGS, hardenedGitEnv } from '../../jobs/hardened-git.ts';
import { programEnv } from '../command/program-env.ts';
import { helper } from '../helper-paths.ts';
import { asUser, type RunAs, runAsEnv } from '../run-as.ts';

export interface BuildKeySpec {
  git: boolean;
  dirty_diff: boolean;
  flags: string[];
  toolchain: string[];
}

export interface BuildKeyInput {
  cmd: string;
  artifacts: string[];
  key: BuildKeySpec;
  /** Absolute directory the build runs in (the user's checkout). */
  dir: string;
  /** Dotted spec path of the build, for messages. */
  path?: string;
  /**
   * The toolchain commands run as this user, in `cwd` (worker/builds/build-as-user.ts): a root
   * worker's run-as user; absent, as the worker in `dir`.
   */
  toolchainAs?: { runAs: RunAs; cwd: string } | null;
}

export interface BuildKey {
  /** 64 hex digits. */
  key: string;
  /** The recipe alone (cmd + artifacts + flags): "similar builds" share it across commits. */
  recipe: string;
  parts: {
    commit: string | null;
    diff_sha256: string | null;
    untracked: number;
    toolchain: { cmd: string; sha256: string }[];
  };
}

const sha256 = (b: string | Buffer) => createHash('sha256').update(b).digest('hex');

function run(
  file: string,
  args: string[],
  cwd: string,
  runAs: RunAs | null = null,
): Promise<{ code: number; out: Buffer; err: string }> {
  // git reads the user's checkout, hardened: no hook, no home or system gitconfig (jobs/hardened-git.ts);
  // a toolchain command is the spec's, so it gets a program's environment, as a program's user
  const [exe, ...argv] =
    file === 'git' ? [helper('git'), ...HARDENED_GIT_ARGS, ...args] : asUser(runAs, [file, ...args]);
  const env = file === 'git' ? hardenedGitEnv() : { ...programEnv({}), ...runAsEnv(runAs) };
  return new Promise((resolve) => {
    execFile(exe!, argv, { cwd, env, encoding: 'buffer', maxBuffer: 256 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 127) : 0;
      resolve({ code, out: stdout, err: stderr.toString() });
    });
  });
}

export async function computeBuildKey(input: BuildKeyInput): Promise<BuildKey> {
  const path = input.path ?? 'workload.build';
  const h = createHash('sha256');
  const recipe = sha256(JSON.stringify({ cmd: input.cmd, artifacts: input.artifacts, flags: input.key.flags }));
  h.update(`recipe\0${recipe}\0`);
  let commit: string | null = null;
  let diffSha: string | null = null;
  let untracked = 0;
  // git in a missing cwd fails to spawn ("git exit 127"): name the directory instead.
  const dirStat = await stat(input.dir).catch((err: NodeJS.ErrnoException) => err.code ?? String(err));
  if (typeof dirStat === 'string' || !dirStat.isDirectory()) {
    throw new UserInputError(
      'BUILD_DIR_MISSING',
      `${path}.dir: ${input.dir} is not a directory on this host (${typeof dirStat === 'string' ? dirStat : 'not a directory'})`,
      {
        hint: `check ${path}.dir (a relative dir is relative to the worker's working directory, ~ is the worker's home), or clone the checkout there`,
      },
    );
  }
  if (input.key.git || input.key.dirty_diff) {
    const r = await run('git', ['rev-parse', 'HEAD'], input.dir);
    if (r.code !== 0) {
      throw new UserInputError(
        'BUILD_NOT_GIT',
        `${path}.key.git: ${input.dir} is not a git checkout with a commit (${r.err.trim() || `git exit ${r.code}`})`,
        {
          hint: `commit the sources there, or set ${path}.key.git: false and ${path}.key.dirty_diff: false`,
        },
      );
    }
    commit = r.out.toString().trim();
    h.update(`commit\0${commit}\0`);
  }
  if (input.key.dirty_diff) {
    const diff = await run('git', ['diff', 'HEAD', '--binary', '--no-ext-diff', '--no-textconv'], input.dir);
    const others = await run('git', ['ls-files', '--others', '--exclude-standard', '-z'], input.dir);
    if (diff.code !== 0 || others.code !== 0) {
      throw new UserInputError(
        'BUILD_GIT_FAILED',
        `${path}.key.dirty_diff: git diff failed in ${input.dir}: ${diff.err || others.err}`,
      );
    }
    const d = createHash('sha256').update(diff.out);
    const files = others.out
      .toString()
      .split('\0')
      .filter((f) => f !== '')
      .sort();
    for (const f of files) {
      d.update(`\0untracked\0${f}\0`);
      d.update(sha256(await readFile(join(input.dir, f)).catch(() => Buffer.from('<unreadable>'))));
    }
    untracked = files.length;
    diffSha = diff.out.length === 0 && files.length === 0 ? null : d.digest('hex');
    h.update(`diff\0${diffSha ?? 'clean'}\0`);
  }
  const toolchain: { cmd: string; sha256: string }[] = [];
  for (const [i, cmd] of input.key.toolchain.entries()) {
    const as = input.toolchainAs ?? null;
    const r = await run('/bin/sh', ['-c', cmd], as?.cwd ?? input.dir, as?.runAs ?? null);
    if (r.code !== 0) {
      throw new UserInputError(
        'BUILD_TOOLCHAIN_FAILED',
        `${path}.key.toolchain[${i}]: "${cmd}" exited ${r.code}: ${r.err.trim().split('\n').slice(-3).join(' | ')}`,
      );
    }
    const s = sha256(Buffer.concat([r.out, Buffer.from(r.err)]));
    toolchain.push({ cmd, sha256: s });
    h.update(`toolchain\0${cmd}\0${s}\0`);
  }
  return { key: h.digest('hex'), recipe, parts: { commit, diff_sha256: diffSha, untracked, toolchain } };
}
