/**
 * A build of one commit (builds as arms, jobs/build-refs.ts): a detached git worktree of the
 * commit under the build directory —
 *
 *   worktrees/<commit>/        `git worktree add --detach`, never the user's checkout
 *   worktrees/<commit>.ready   written once the worktree is whole
 *
 * made under its own flock (so two requests never add the same worktree), then built through
 * the host build cache (build-cache.ts): once per host and key, under the build lock, shared
 * by waiters. The key always holds the commit and never a dirty diff: the worktree is exactly
 * the commit, and the build's own outputs inside it must not change the key.
 */

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { UserInputError } from '../../jobs/errors.ts';
import { HARDENED_GIT_ARGS, hardenedGitEnv } from '../../jobs/hardened-git.ts';
import { helper } from '../helper-paths.ts';
import type { BuildCache, BuildRequest, BuildSpecInput, EnsuredBuild } from './build-cache.ts';
import { acquireBuildLock } from './build-lock.ts';

export interface CommitBuildRequest {
  /** The build's name in the spec (`builds.<name>`), for messages. */
  name: string;
  ref: string;
  commit: string;
  /** The repository the commit is in (absolute, on this host). */
  repo: string;
  /** The workload's build recipe; its `dir` is replaced by the worktree. */
  build: BuildSpecInput;
  /** Dotted name of the recipe in messages (default `workload.build`). */
  path?: string;
  experiment?: string;
  onEvent?: BuildRequest['onEvent'];
}

export interface CommitBuild extends EnsuredBuild {
  name: string;
  commit: string;
  worktree: string;
}

function git(args: string[], cwd: string): Promise<{ code: number; err: string }> {
  return new Promise((resolve) => {
    execFile(helper('git'), [...HARDENED_GIT_ARGS, ...args], { cwd, env: hardenedGitEnv() }, (error, _out, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 127) : 0, err: String(stderr) }),
    );
  });
}

export async function ensureWorktree(root: string, repo: string, commit: string, name: string): Promise<string> {
  const dir = join(root, 'worktrees', commit);
  const ready = `${dir}.ready`;
  if (existsSync(ready)) return dir;
  await mkdir(join(root, 'worktrees'), { recursive: true });
  const lock = await acquireBuildLock(join(root, '.worktree.lock'));
  try {
    if (existsSync(ready)) return dir;
    // A worktree a killed request left half made: drop it and git's record of it.
    await rm(dir, { recursive: true, force: true });
    await git(['worktree', 'prune'], repo);
    const r = await git(['worktree', 'add', '--detach', '--force', dir, commit], repo);
    if (r.code !== 0) {
      throw new UserInputError(
        'BUILD_COMMIT_MISSING',
        `builds.${name}: cannot check out commit ${commit} of ${repo} on this host: ${r.err.trim().split('\n').slice(-2).join(' | ')}`,
        {
          hint: `fetch the commit into ${repo} on this host (git fetch), or submit from a checkout that has it`,
        },
      );
    }
    await writeFile(ready, `${commit}\n`);
    return dir;
  } finally {
    await lock.release();
  }
}

export async function ensureCommitBuild(cache: BuildCache, req: CommitBuildRequest): Promise<CommitBuild> {
  const worktree = await ensureWorktree(cache.root, req.repo, req.commit, req.name);
  const build: BuildSpecInput = {
    ...req.build,
    dir: worktree,
    key: { ...req.build.key, git: true, dirty_diff: false },
  };
  try {
    const b = await cache.ensure({
      build,
      path: req.path ?? 'workload.build',
      ...(req.experiment ? { experiment: req.experiment } : {}),
      ...(req.onEvent ? { onEvent: req.onEvent } : {}),
    });
    return { ...b, name: req.name, commit: req.commit, worktree };
  } catch (err) {
    if (err instanceof UserInputError) {
      // The same error, naming which build of the spec failed: its ref and commit.
      throw new UserInputError(err.code, `build "${req.name}" (ref ${req.ref}, commit ${req.commit}): ${err.message}`, {
        cause: err,
        ...(err.hint ? { hint: err.hint } : {}),
      });
    }
    throw err;
  }
}
