/**
 * Compiler caches that outlive a block: TorchInductor's, Triton's and the CUDA driver's JIT cache
 * of a resident command rank, one set per build on this host (under the build cache's parent, next
 * to the builds themselves), kept across blocks and experiments, so that a block after the first
 * starts warm: no torch.compile, no Triton autotune, no PTX JIT again. The spec's run.env may name
 * its own (it wins: programEnv takes run.env after these). `orch prune --rank-caches` removes them
 * (worker/command/rank-caches-prune.ts).
 */
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readdirSync, utimesSync } from 'node:fs';
import { dirname, join } from 'node:path';

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

/** The caches of build `buildKey` (null: the program runs from the checkout, no build) under `buildRoot`'s parent. */
export function rankCaches(buildRoot: string, buildKey: string | null): RankCaches {
  const dir = join(rankCachesRoot(buildRoot), rankCacheName(buildKey));
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

function touch(file: string): void {
  closeSync(openSync(file, 'a', 0o600));
  const now = new Date();
  utimesSync(file, now, now);
}
