/**
 * A build run as the run-as user (worker/run-as.ts) of a root worker. A build's recipe is a user's
 * program too (a CMakeLists.txt runs what it likes), so it runs as that user and can read none of
 * the worker's secrets. What it may write, and nothing else of the build cache:
 *
 *   tmp/                    0710, group G (the user's): passable, to reach its own output directory
 *   tmp/<staging>.out/      the user's, 0700: $ORCH_BUILD_OUT
 *   tmp/<staging>/          the worker's, 0700: the artifacts are copied there as the worker, so
 *                           they are its files (a hard link becomes a file of its own), and lose
 *                           set-user-id and set-group-id bits before anything can run them
 *   worktrees/<commit>/     lent for the build: the user owns each entry (but a file with another
 *                           link elsewhere) while it runs, and the worker takes every entry back
 *                           after; worktrees/ is passable (0710, group G) meanwhile only. The host
 *                           build lock lets one build at a time hold a worktree.
 *
 * A checkout outside the build cache (workload.build.dir) is the operator's: orch changes nothing
 * there; the user must be able to enter it (checked before the key is computed) and to write
 * where the recipe writes. The key's toolchain commands run as the user as well (build-key.ts), in
 * the checkout, or in / for a worktree, which is lent only to its build. A program of the same user running meanwhile could write into a build in
 * progress, as it can into the rank caches; a finished build is the worker's, read-only to it.
 */
import { lchown, lstat, readdir } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { UserInputError } from '../../jobs/errors.ts';
import type { RunAs } from '../run-as.ts';
import { describeBlocker, searchBlocker, setAccess } from '../run-as-reach.ts';

/** Refuses (RUN_AS_UNREACHABLE) a build directory `runAs` cannot enter, before the build starts. */
export function checkBuildDir(dir: string, runAs: RunAs, path: string): void {
  const blocker = searchBlocker(dir, runAs);
  if (blocker === null) return;
  throw new UserInputError(
    'RUN_AS_UNREACHABLE',
    `${path}.dir: the build would run in ${dir}, but ${runAs.user}, the user this worker runs builds and programs as (--run-as), cannot enter ${describeBlocker(blocker)}`,
    {
      hint: `put the checkout where ${runAs.user} can enter and write, or build a commit of it (builds:, in a worktree the worker lends ${runAs.user}), or start the worker with --run-as none`,
    },
  );
}

/** Opens `tmp` to `runAs`'s group for passing and makes `out` (made already) the user's own. */
export function ownOutput(tmp: string, out: string, runAs: RunAs): void {
  setAccess(out, 0o700, { uid: runAs.uid, gid: runAs.gid });
  setAccess(tmp, 0o710, { gid: runAs.gid });
}

/** Whether `dir` is a worktree of the build cache rooted at `root` (worktrees/<commit>). */
export function isCacheWorktree(root: string, dir: string): boolean {
  const rel = relative(join(root, 'worktrees'), dir);
  return rel !== '' && !rel.startsWith('..') && !rel.includes(sep);
}

/**
 * Lends worktree `dir` to `runAs` for one build; the returned function takes it back (the
 * worker's own again, worktrees/ closed). Neither follows a link: each entry is lchown'd itself.
 */
export async function lendWorktree(dir: string, runAs: RunAs): Promise<() => Promise<void>> {
  const worktrees = join(dir, '..');
  const worker = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
  await chownTree(dir, runAs);
  setAccess(worktrees, 0o710, { gid: runAs.gid });
  return async () => {
    setAccess(worktrees, 0o700, { gid: worker.gid });
    await chownTree(dir, worker);
  };
}

/**
 * Gives every entry under `dir` (itself included) to `owner`, links as links. A file with more
 * than one link is left alone: its inode is also a file elsewhere, which lending must not hand out.
 */
async function chownTree(dir: string, owner: { uid: number; gid: number }): Promise<void> {
  const st = await lstat(dir);
  if (!st.isDirectory() && st.nlink > 1) return;
  await lchown(dir, owner.uid, owner.gid);
  if (!st.isDirectory()) return;
  for (const e of await readdir(dir)) await chownTree(join(dir, e), owner);
}

/** Drops set-user-id, set-group-id and sticky bits under `dir` (the worker's staging; links skipped). */
export async function dropSetIds(dir: string): Promise<void> {
  const st = await lstat(dir);
  if (st.isSymbolicLink()) return;
  if ((st.mode & 0o7000) !== 0) setAccess(dir, st.mode & 0o777);
  if (!st.isDirectory()) return;
  for (const e of await readdir(dir)) await dropSetIds(join(dir, e));
}
