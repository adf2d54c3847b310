/**
 * Where a run's numbers came from, for the report's header and each nightly row: orch's version and
 * commit, this host, and for a command workload built from a git checkout, that checkout's
 * commit when the run was submitted (read where `orch serve` runs; a build on another host reads
 * its own checkout, which the build key records).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { PackageJsonSchema } from '../../jobs/package-json.ts';
import { parseStored } from '../../jobs/parse-stored.ts';
import type { Spec } from '../../jobs/spec.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface OrchProvenance {
  version: string | null;
  commit: string | null;
  /** the checkout orch runs from differs from `commit` in tracked files (null: not a git checkout) */
  dirty: boolean | null;
  host: string;
}

export function gitCommit(dir: string): string | null {
  try {
    return (
      execFileSync('git', ['-C', dir, 'rev-parse', 'HEAD'], {
        encoding: 'utf8',
        timeout: 5000,
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim() || null
    );
  } catch {
    return null;
  }
}

/**
 * Whether a checkout's tracked files differ from its HEAD. A copied tree whose .git is older
 * than its files (a deployment that copies the working tree) would otherwise report the old
 * commit as what ran.
 */
export function gitDirty(dir: string): boolean | null {
  try {
    return (
      execFileSync('git', ['-C', dir, 'status', '--porcelain', '--untracked-files=no'], {
        encoding: 'utf8',
        timeout: 5000,
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim() !== ''
    );
  } catch {
    return null;
  }
}

export function orchProvenance(): OrchProvenance {
  let version: string | null = null;
  try {
    version = parseStored(
      PackageJsonSchema,
      readFileSync(`${ROOT}package.json`, 'utf8'),
      `${ROOT}package.json`,
    ).version;
  } catch {
    // an install without package.json next to it (or one without a version): no version to record
  }
  const commit = gitCommit(ROOT);
  return { version, commit, dirty: commit === null ? null : gitDirty(ROOT), host: hostname() };
}

/** build dir → commit, for a command workload whose build key includes the commit. */
export function specCommits(spec: Spec): Record<string, string> {
  const w = spec.workload as { runtime: string; build?: { dir?: string; key?: { git?: boolean } } };
  if (w.runtime !== 'command' || !w.build?.dir || w.build.key?.git === false) return {};
  const c = gitCommit(w.build.dir.replace(/^~(?=\/)/, process.env.HOME ?? '~'));
  return c ? { [w.build.dir]: c } : {};
}
