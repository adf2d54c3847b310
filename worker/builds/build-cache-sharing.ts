/**
 * The build cache (build-cache.ts) shared with the run-as user (worker/run-as.ts): its programs
 * execute `$ORCH_ARTIFACTS/...`, so they must read every build's artifacts, and nothing more: not
 * write them (other experiments run the same build), not reach the worker's build logs, staging,
 * worktrees or lock files (a read-only open of a lock file is enough to flock(2) it and stall
 * every build of the host). Modes, with G the run-as user's primary group:
 *
 *   <root>/                   owner's, group G, 0710  G may pass through, not list
 *   <root>/artifacts/         group G, 0750
 *   <root>/artifacts/<key>/…  group G, g+r (+x where a directory or the owner's x), no write
 *                             for group or others, no setuid/setgid; a hard link the build
 *                             made is left as it is (its inode is also a file elsewhere)
 *   every other entry         0700 / 0600: the worker's alone (.build.lock, .worktree.lock
 *                             made here, so flock(1) never creates them 0644); tmp/ and
 *                             worktrees/ open to G while a build runs as the user
 *                             (build-as-user.ts)
 *
 * Nothing above the root is touched but what this makes there (0755 whatever the umask: the
 * /var/cache/orch of --build-dir /var/cache/orch/builds): a directory there that the run-as user
 * cannot search (/root, 0700, above the default ~/.cache/orch/builds of a root worker) refuses
 * the start, naming it, since opening it would open everything else under it too.
 */
import { closeSync, constants, existsSync, lstatSync, mkdirSync, openSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { UserInputError } from '../../jobs/errors.ts';
import type { RunAs } from '../run-as.ts';
import { describeBlocker, searchBlocker, setAccess } from '../run-as-reach.ts';

/** The worker's own directories and lock files in the build root, made before anything else would make them. */
const PRIVATE_DIRS = ['logs', 'failed', 'tmp', 'worktrees'];
const LOCK_FILES = ['.build.lock', '.worktree.lock'];

/** Prepares build root `root` for programs run as `runAs`; refuses (UserInputError) a root that user cannot reach. */
export function shareBuildRoot(root: string, runAs: RunAs): void {
  mkdirPassableAbove(join(root, 'artifacts'), 0o777);
  for (const d of PRIVATE_DIRS) mkdirSync(join(root, d), { recursive: true, mode: 0o700 });
  for (const f of LOCK_FILES)
    closeSync(openSync(join(root, f), constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW, 0o600));
  // the rank caches live beside the root (worker/command/rank-caches.ts): its parent counts too
  const blocker = searchBlocker(dirname(root), runAs);
  if (blocker !== null)
    throw new UserInputError(
      'RUN_AS_UNREACHABLE',
      `--run-as ${runAs.user}: the build cache ${root} lies under ${describeBlocker(blocker)}, which ${runAs.user} cannot enter; its programs could not run a build's artifacts nor write their rank caches`,
      {
        hint: `pass --build-dir (or set ORCH_BUILD_DIR) to a directory outside it, e.g. --build-dir /var/cache/orch/builds (give \`orch prune --rank-caches\` the same), or let ${runAs.user} enter ${blocker.dir} if nothing secret is kept there`,
      },
    );
  for (const entry of readdirSync(root)) {
    if (entry === 'artifacts') continue;
    const st = lstatSync(join(root, entry));
    if (st.isDirectory() || st.isFile()) setAccess(join(root, entry), st.mode & 0o700);
  }
  setAccess(root, 0o710, { gid: runAs.gid });
  setAccess(join(root, 'artifacts'), 0o750, { gid: runAs.gid });
}

/**
 * Makes `dir` with `mode` (the umask applies), and the directories above it that were missing
 * passable (0755) whatever the umask: they are orch's own, and a run-as user must pass through
 * them to the build root and the rank caches. One recursive mkdir would give them `mode` too.
 */
export function mkdirPassableAbove(dir: string, mode: number): void {
  const made = missingAncestors(dir);
  mkdirSync(dir, { recursive: true, mode });
  for (const d of made) setAccess(d, 0o755);
}

/** The directories above `dir` that do not exist yet, the highest first. */
function missingAncestors(dir: string): string[] {
  const missing: string[] = [];
  for (let d = dirname(dir); d !== dirname(d) && !existsSync(d); d = dirname(d)) missing.unshift(d);
  return missing;
}

/**
 * Opens finished build `dir` (artifacts/<key>) to `runAs`'s group, read-only; a build already
 * of that group is left as it is. The top directory is done last, so a walk cut short is done
 * again by the next request.
 */
export function shareArtifacts(dir: string, runAs: RunAs): void {
  if (lstatSync(dir).gid === runAs.gid) return;
  share(dir, runAs.gid);
}

function share(path: string, gid: number): void {
  const st = lstatSync(path);
  // a link's own mode means nothing (its target decides); a socket or device is no artifact
  if (!st.isDirectory() && !st.isFile()) return;
  // a hard link made by the build shares its inode with a file elsewhere (a system library, a
  // secret): its modes are that file's, not the build's to change
  if (st.isFile() && st.nlink > 1) return;
  if (st.isDirectory()) for (const e of readdirSync(path)) share(join(path, e), gid);
  const x = st.isDirectory() || (st.mode & 0o100) !== 0 ? 0o010 : 0;
  // the owner keeps its write bit; group and others never write, and nothing runs with its owner's ids
  setAccess(path, (st.mode & 0o755) | 0o040 | x, { gid });
}
