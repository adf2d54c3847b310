/**
 * Making the worker non-dumpable (prctl PR_SET_DUMPABLE 0): then no process of its user, a user's
 * program run as the worker's own user included, may read its memory or its environment through
 * /proc/<pid>/mem, /proc/<pid>/environ or ptrace; its heap holds the Redis password and the
 * cluster secret. Node has no prctl, so orch's native build makes a library that does it when
 * loaded (native/nodump/, liborch_nodump.so beside graphrt), and the worker loads it at start.
 *
 * Only after scrubEnviron (worker/scrub-environ.ts): a non-dumpable process's /proc/self files
 * belong to root, so a worker that is not root can no longer open its own /proc/self/mem to blank
 * the block. A program the worker starts is dumpable again (exec resets the flag), so nothing of
 * the programs' own /proc changes.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { messageOf } from '../jobs/message-of.ts';

/** Where the native build leaves the library (scripts/build-native.mjs). */
export const NODUMP_LIBRARY = fileURLToPath(new URL('../native/build/liborch_nodump.so', import.meta.url));

/** What to do when the library is missing or did not take effect. */
export const NODUMP_FIX = 'build it: node scripts/build-native.mjs (cmake and a C compiler)';

/**
 * Loads `library` into this process, which makes it non-dumpable, and checks the flag through
 * the library's own dumpable(). Returns null once the process is non-dumpable, else why not.
 */
export function makeNonDumpable(library: string = NODUMP_LIBRARY): string | null {
  if (process.platform !== 'linux') return `not Linux (${process.platform}): there is no PR_SET_DUMPABLE`;
  if (!existsSync(library)) return `${library} is not built`;
  const mod: { exports: { dumpable?: () => number } } = { exports: {} };
  try {
    process.dlopen(mod, library);
  } catch (err) {
    return `${library} did not load: ${messageOf(err)}`;
  }
  const dumpable = typeof mod.exports.dumpable === 'function' ? mod.exports.dumpable() : undefined;
  return dumpable === 0 ? null : `${library} loaded, but the process is still dumpable (prctl says ${dumpable})`;
}
