/**
 * A build artifact's path must stay inside the build directory (and inside the cache entry it is
 * copied to): the cache copies `<dir>/<artifact>` to `artifacts/<key>/<artifact>`, so `../../..`
 * would copy a directory outside the build into a path outside the cache. Pure.
 */
import { isAbsolute, normalize } from 'node:path';

/** Why `artifact` leaves its directory, or null when it stays inside. */
export function artifactEscape(artifact: string): string | null {
  if (isAbsolute(artifact)) return `"${artifact}" is absolute; an artifact is a path relative to the build directory`;
  const n = normalize(artifact);
  if (n === '.' || n === './')
    return `"${artifact}" is the build directory itself; list the files or directories the build produces`;
  if (n === '..' || n.startsWith('../')) return `"${artifact}" leaves the build directory`;
  return null;
}
