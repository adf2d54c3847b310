/**
 * Compiler caches that outlive a block: TorchInductor's, Triton's and the CUDA driver's JIT cache
 * of a resident command rank, one set per build on this host (under the build cache's parent, next
 * to the builds themselves), kept across blocks and experiments, so that a block after the first
 * starts warm: no torch.compile, no Triton autotune, no PTX JIT again. The spec's run.env may name
 * its own (it wins: programEnv takes run.env after these).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The variables, each with its directory's name under the build's cache directory. */
const CACHES = { TORCHINDUCTOR_CACHE_DIR: 'inductor', TRITON_CACHE_DIR: 'triton', CUDA_CACHE_PATH: 'cuda' } as const;

export interface RankCaches {
  env: Record<keyof typeof CACHES, string>;
  /** warm: one of the caches held something already when the rank started; cold: none did */
  state: 'warm' | 'cold';
  dir: string;
}

/** The caches of build `buildKey` (null: the program runs from the checkout, no build) under `buildRoot`'s parent. */
export function rankCaches(buildRoot: string, buildKey: string | null): RankCaches {
  const name = buildKey === null ? 'checkout' : createHash('sha256').update(buildKey).digest('hex').slice(0, 16);
  const dir = join(dirname(buildRoot), 'rank-caches', name);
  let warm = false;
  const env = {} as Record<keyof typeof CACHES, string>;
  for (const [variable, sub] of Object.entries(CACHES) as [keyof typeof CACHES, string][]) {
    const d = join(dir, sub);
    mkdirSync(d, { recursive: true, mode: 0o700 });
    if (readdirSync(d).length > 0) warm = true;
    env[variable] = d;
  }
  return { env, state: warm ? 'warm' : 'cold', dir };
}
