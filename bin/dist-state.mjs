// Whether dist/ (the CLI compiled by scripts/build-cli.mjs) may run instead of the TypeScript
// sources. dist/build.json records when the build began and every source file it read; dist is
// fresh only if each of those files still exists and was last written before that moment. A
// `git pull` or `git checkout` rewrites the files it changes (new mtimes), and an edit during
// the build lands after the recorded start, so a stale dist is never taken for a fresh one.
// About 200 stat calls: a few milliseconds, far less than compiling the sources.
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const DIST = fileURLToPath(new URL('../dist/', import.meta.url));
export const BUILD_INFO = 'build.json';

/** @returns {{ fresh: true, main: string } | { fresh: false, reason: string }} */
export function distState(dist = DIST, root = ROOT) {
  let info;
  try {
    info = JSON.parse(readFileSync(`${dist}${BUILD_INFO}`, 'utf8'));
  } catch {
    return { fresh: false, reason: 'dist/ is not built' };
  }
  for (const input of info.inputs) {
    let mtime;
    try {
      mtime = statSync(`${root}${input}`).mtimeMs;
    } catch {
      return { fresh: false, reason: `${input}, compiled into dist/, is gone` };
    }
    if (mtime > info.startedMs) return { fresh: false, reason: `${input} changed after dist/ was built` };
  }
  return { fresh: true, main: `${dist}${info.main}` };
}
