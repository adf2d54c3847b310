/**
 * What `orch prune --rank-caches` removes of this host's compiler caches (worker/command/rank-caches.ts):
 * a build's caches once the build itself is gone from the build cache (nothing can start warm from
 * them again), and any build's caches, the checkout's too, not used by a rank for longer than the
 * bound (a build kept for ever should not keep gigabytes of Inductor and Triton output for ever).
 * A directory that is not a cache set (a name neither a build's nor the checkout's) is left alone.
 * The cache sets of a run-as user (`as-<user>/`, that user's own) are judged the same; they are
 * removed as that user (setpriv rm), never by root walking a tree another user can change under it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { OrchError } from '../../jobs/errors.ts';
import { COMPLETE_MARKER } from '../builds/build-cache.ts';
import { asUser } from '../run-as.ts';
import {
  CHECKOUT_CACHE_NAME,
  LAST_USED_FILE,
  RUN_AS_CACHES_DIR,
  rankCacheName,
  rankCachesRoot,
} from './rank-caches.ts';

export interface PrunableCache {
  dir: string;
  /** the build the caches belong to (its key), null for the checkout's or a build no longer in the cache */
  build: string | null;
  /** why it goes: its build is gone, or its last use is older than the bound */
  why: 'build removed' | 'unused';
  last_used: number | null;
}

const CACHE_NAME = /^[0-9a-f]{16}$/;

/** The cache sets under `buildRoot`'s parent, the run-as users' too, that go: unreferenced by a finished build, or last used before `cutoffMs`. */
export function prunableRankCaches(buildRoot: string, cutoffMs: number): PrunableCache[] {
  const root = rankCachesRoot(buildRoot);
  if (!existsSync(root)) return [];
  const builds = finishedBuilds(buildRoot);
  const found = prunableIn(root, builds, cutoffMs);
  for (const name of readdirSync(root).sort())
    if (RUN_AS_CACHES_DIR.test(name) && lstatSync(join(root, name)).isDirectory())
      found.push(...prunableIn(join(root, name), builds, cutoffMs));
  return found;
}

function prunableIn(root: string, builds: Map<string, string>, cutoffMs: number): PrunableCache[] {
  const found: PrunableCache[] = [];
  for (const name of readdirSync(root).sort()) {
    if (name !== CHECKOUT_CACHE_NAME && !CACHE_NAME.test(name)) continue;
    const dir = join(root, name);
    const build = name === CHECKOUT_CACHE_NAME ? null : (builds.get(name) ?? null);
    const lastUsed = lastUse(dir);
    if (name !== CHECKOUT_CACHE_NAME && build === null)
      found.push({ dir, build, why: 'build removed', last_used: lastUsed });
    else if (lastUsed === null || lastUsed < cutoffMs) found.push({ dir, build, why: 'unused', last_used: lastUsed });
  }
  return found;
}

/** Removes the listed cache sets, a run-as user's as that user; a rank starting meanwhile recreates its directories (cold). */
export function removeRankCaches(caches: readonly PrunableCache[]): void {
  for (const c of caches) {
    const parent = dirname(c.dir);
    const owner = lstatSync(parent);
    if (!RUN_AS_CACHES_DIR.test(basename(parent)) || owner.uid === process.getuid?.()) {
      rmSync(c.dir, { recursive: true, force: true });
      continue;
    }
    const user = basename(parent).slice('as-'.length);
    const [file, ...args] = asUser({ user, uid: owner.uid, gid: owner.gid, home: '/' }, [
      '/bin/rm',
      '-rf',
      '--',
      c.dir,
    ]);
    const r = spawnSync(file!, args, { cwd: '/', env: { PATH: '/usr/bin:/bin' }, encoding: 'utf8' });
    if (r.status !== 0)
      throw new OrchError(
        'RANK_CACHES_FAILED',
        `removing ${c.dir} as ${user} (uid ${owner.uid}) failed: ${r.error?.message ?? (r.stderr.trim() || `exit ${r.status ?? r.signal}`)}`,
      );
  }
}

/** Cache name → build key of every finished build (artifacts/<key>/.complete). */
function finishedBuilds(buildRoot: string): Map<string, string> {
  const artifacts = join(buildRoot, 'artifacts');
  if (!existsSync(artifacts)) return new Map();
  return new Map(
    readdirSync(artifacts)
      .filter((key) => existsSync(join(artifacts, key, COMPLETE_MARKER)))
      .map((key) => [rankCacheName(key), key]),
  );
}

/** When a rank last started with these caches (the marker's mtime); null: never recorded. */
function lastUse(dir: string): number | null {
  const marker = join(dir, LAST_USED_FILE);
  // lstat: in a run-as user's set the marker could be a link to any file of the host
  return existsSync(marker) ? lstatSync(marker).mtimeMs : null;
}
