/**
 * orch's injection library (launch-counter.ts) where the run-as user (worker/run-as.ts) can load
 * it. CUDA loads `CUDA_INJECTION64_PATH` in the program, as that user: a library inside an orch
 * checkout it cannot enter (under /root, the usual place of a root worker's checkout) would fail
 * every program's CUDA start. So the worker copies it, once per content, beside the build cache:
 *
 *   <build root's parent>/lib/<sha256, 16 hex>/liborch_inject.so   the worker's, 0755 / 0644
 *
 * made under a temporary name and renamed into place, so a program that maps one never sees it
 * change; a library the user can already read is used where it is.
 */
import { createHash } from 'node:crypto';
import { chmodSync, constants, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { RunAs } from '../run-as.ts';
import { searchBlocker, setAccess, userMay } from '../run-as-reach.ts';

/** Whether `runAs` can reach and read `file` (modes only, as run-as-reach.ts decides). */
function readable(file: string, runAs: RunAs): boolean {
  return searchBlocker(dirname(file), runAs) === null && userMay(statSync(file), runAs, 4);
}

/** The injection library `lib` as `runAs` loads it: `lib` itself, or the worker's copy beside `buildRoot`. */
export function injectLibFor(lib: string | null, buildRoot: string, runAs: RunAs | null): string | null {
  if (lib === null || runAs === null || readable(lib, runAs)) return lib;
  const bytes = readFileSync(lib);
  const dir = join(dirname(buildRoot), 'lib', createHash('sha256').update(bytes).digest('hex').slice(0, 16));
  const copy = join(dir, basename(lib));
  if (existsSync(copy)) return copy;
  mkdirSync(dir, { recursive: true });
  for (let d = dir; d !== dirname(buildRoot); d = dirname(d)) setAccess(d, 0o755);
  const part = `${copy}.${process.pid}.part`;
  copyFileSync(lib, part, constants.COPYFILE_FICLONE);
  chmodSync(part, 0o644);
  renameSync(part, copy);
  return copy;
}
