/**
 * The absolute paths of the host programs orch itself runs around a user's program (flock(1)
 * for the card's lock, setpriv(1) for the death signal and the run-as user, git for builds of
 * commits, nvidia-smi for the cards and their foreign processes), resolved once from
 * the worker's own PATH. A program's environment may carry a spec's `env: {PATH: ...}`; Node's
 * spawn looks a bare name up in the child's PATH, so a helper named bare would be the spec's own
 * `flock` — a per-rep command running without the card's lock. Resolved here, that PATH reaches
 * only the user's program.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { OrchError } from '../jobs/errors.ts';

export type Helper = 'flock' | 'setpriv' | 'git' | 'nvidia-smi';

/** The worker's PATH as it started: read once, before any spec could be seen. */
const WORKER_PATH = process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin';
const resolved = new Map<Helper, string | null>();

/** The first executable `name` on the worker's PATH, or null. */
export function lookUp(name: string, path: string = WORKER_PATH): string | null {
  for (const dir of path.split(delimiter)) {
    // a relative PATH entry would resolve against whatever cwd a spawn has
    if (dir === '' || !isAbsolute(dir)) continue;
    const file = join(dir, name);
    try {
      if (!statSync(file).isFile()) continue;
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return null;
}

/** `name`'s absolute path, or null when the host has none. */
export function helperPath(name: Helper): string | null {
  if (!resolved.has(name)) resolved.set(name, lookUp(name));
  return resolved.get(name)!;
}

/** `name`'s absolute path where the worker's PATH has it, else the bare name (spawn's error then names it). */
export function helper(name: Helper): string {
  return helperPath(name) ?? name;
}

/** `name`'s absolute path; a host without it cannot run the block. */
export function requireHelper(name: Helper, why: string): string {
  const file = helperPath(name);
  if (file === null)
    throw new OrchError('HELPER_MISSING', `${name} not found on the worker's PATH (${WORKER_PATH}): ${why}`, {
      hint: `install util-linux's ${name} on this host, or put its directory on the worker's PATH`,
    });
  return file;
}
