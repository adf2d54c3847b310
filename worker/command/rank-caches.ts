/**
 * Compiler caches that outlive a block: TorchInductor's, Triton's and the CUDA driver's JIT cache
 * of a resident command rank, one set per build on this host (under the build cache's parent, next
 * to the builds themselves), kept across blocks and experiments, so that a block after the first
 * starts warm: no torch.compile, no Triton autotune, no PTX JIT again. The spec's run.env may name
 * its own (it wins: programEnv takes run.env after these). `orch prune --rank-caches` removes them
 * (worker/command/rank-caches-prune.ts).
 *
 * A worker with --run-as keeps its programs' caches apart, in `rank-caches/as-<user>/` (0700,
 * that user's), never the worker's own: a program run as root must not load an Inductor or Triton
 * cache (Python pickles, compiled kernels) that an unprivileged program could have written.
 * Inside that directory the worker does nothing as root (a link the user planted there would
 * lead a root mkdir or touch anywhere): it makes and reads the cache set as the user, through
 * setpriv. `rank-caches/` itself becomes 0711, so each user passes through to its own alone.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readdirSync, utimesSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { OrchError, UserInputError } from '../../jobs/errors.ts';
import { mkdirPassableAbove } from '../builds/build-cache-sharing.ts';
import { asUser, type RunAs } from '../run-as.ts';
import { describeBlocker, searchBlocker, setAccess } from '../run-as-reach.ts';

/** The variables, each with its directory's name under the build's cache directory. */
const CACHES = { TORCHINDUCTOR_CACHE_DIR: 'inductor', TRITON_CACHE_DIR: 'triton', CUDA_CACHE_PATH: 'cuda' } as const;

/** A file in each build's cache directory touched at every rank start: a directory's own mtime does not move when a compiler writes deep inside it. */
export const LAST_USED_FILE = 'last-used';
/** The cache directory of the program run from the checkout (no build). */
export const CHECKOUT_CACHE_NAME = 'checkout';

export interface RankCaches {
  env: Record<keyof typeof CACHES, string>;
  /** warm: one of the caches held something already when the rank started; cold: none did */
  state: 'warm' | 'cold';
  dir: string;
}

/** Where every build's rank caches live, beside the build cache `buildRoot`. */
export function rankCachesRoot(buildRoot: string): string {
  return join(dirname(buildRoot), 'rank-caches');
}

/** The directory name of build `buildKey`'s caches (null: the checkout's). */
export function rankCacheName(buildKey: string | null): string {
  return buildKey === null ? CHECKOUT_CACHE_NAME : createHash('sha256').update(buildKey).digest('hex').slice(0, 16);
}

/** The name of a run-as user's directory of cache sets under the rank caches' root: `as-<user>`. */
export const RUN_AS_CACHES_DIR = /^as-[a-z_][a-z0-9_-]{0,31}$/;

/** The directory of `runAs`'s own cache sets under the rank caches' root. */
export function runAsCachesDir(root: string, runAs: RunAs): string {
  return join(root, `as-${runAs.user}`);
}

/**
 * The caches of build `buildKey` (null: the program runs from the checkout, no build) under
 * `buildRoot`'s parent: the worker's own, or `runAs`'s when its programs run as that user.
 */
export function rankCaches(buildRoot: string, buildKey: string | null, runAs: RunAs | null = null): RankCaches {
  if (runAs !== null) return runAsRankCaches(buildRoot, buildKey, runAs);
  const root = rankCachesRoot(buildRoot);
  mkdirPassableAbove(root, 0o700);
  const dir = join(root, rankCacheName(buildKey));
  let warm = false;
  const env = {} as Record<keyof typeof CACHES, string>;
  for (const [variable, sub] of Object.entries(CACHES) as [keyof typeof CACHES, string][]) {
    const d = join(dir, sub);
    mkdirSync(d, { recursive: true, mode: 0o700 });
    if (readdirSync(d).length > 0) warm = true;
    env[variable] = d;
  }
  touch(join(dir, LAST_USED_FILE));
  return { env, state: warm ? 'warm' : 'cold', dir };
}

/** `$1`: the cache set; made (umask 077), marked used, and `warm` printed once per cache that holds something. */
const MAKE_AS_USER = `umask 077
mkdir -p "$1/${Object.values(CACHES).join('" "$1/')}" && touch "$1/${LAST_USED_FILE}" || exit 1
for d in ${Object.values(CACHES).join(' ')}; do [ -n "$(ls -A "$1/$d")" ] && echo warm; done; exit 0`;

function runAsRankCaches(buildRoot: string, buildKey: string | null, runAs: RunAs): RankCaches {
  const root = rankCachesRoot(buildRoot);
  mkdirPassableAbove(root, 0o700);
  setAccess(root, 0o711);
  const own = runAsCachesDir(root, runAs);
  mkdirSync(own, { recursive: true, mode: 0o700 });
  setAccess(own, 0o700, { uid: runAs.uid, gid: runAs.gid });
  const dir = join(own, rankCacheName(buildKey));
  // the worker checked the build root's parent at start (build-cache-sharing.ts); a directory changed since is named here
  const blocker = searchBlocker(own, runAs);
  if (blocker !== null)
    throw new UserInputError(
      'RUN_AS_UNREACHABLE',
      `the rank caches ${dir} lie under ${describeBlocker(blocker)}, which ${runAs.user} (--run-as) cannot enter`,
      { hint: `let ${runAs.user} enter ${blocker.dir}, or move the build directory (--build-dir) out from under it` },
    );
  const [file, ...args] = asUser(runAs, ['/bin/sh', '-c', MAKE_AS_USER, 'sh', dir]);
  const r = spawnSync(file!, args, { cwd: '/', env: { PATH: '/usr/bin:/bin' }, encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0)
    throw new OrchError(
      'RANK_CACHES_FAILED',
      `the rank caches ${dir} could not be made as ${runAs.user}: ${r.error?.message ?? (r.stderr.trim() || `exit ${r.status ?? r.signal}`)}`,
    );
  const env = Object.fromEntries(Object.entries(CACHES).map(([v, sub]) => [v, join(dir, sub)])) as RankCaches['env'];
  return { env, state: r.stdout.includes('warm') ? 'warm' : 'cold', dir };
}

function touch(file: string): void {
  closeSync(openSync(file, 'a', 0o600));
  const now = new Date();
  utimesSync(file, now, now);
}
