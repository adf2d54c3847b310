/**
 * Removing the worker's credentials from its own environment once they are read. Deleting them
 * from process.env is not enough: /proc/<pid>/environ shows the environment block the kernel
 * laid out at exec, which unsetenv(3) never touches, and any process of the worker's user may
 * read it (a user's program, when it runs as the worker's user). So the block itself is
 * overwritten: its address range is in /proc/self/stat (env_start, env_end, fields 50 and 51),
 * and a process may write its own memory through /proc/self/mem. Each `NAME=value` entry of the
 * named variables becomes NUL bytes; the others stay as they were.
 *
 * Its heap still holds the secrets: the worker then makes itself non-dumpable
 * (worker/non-dumpable.ts, PR_SET_DUMPABLE 0 through orch's native library), so that no other
 * process of its user may read its memory or its environ at all. That comes after this scrub: a
 * non-dumpable worker that is not root may no longer open its own /proc/self/mem. The run-as user
 * (worker/run-as.ts) is the other defence: a program of another user can read neither.
 */
import { closeSync, openSync, readFileSync, readSync, writeSync } from 'node:fs';

/** Field numbers (1-based, proc(5)) of the environment block's start and end in /proc/<pid>/stat. */
const ENV_START_FIELD = 50;
const ENV_END_FIELD = 51;

/**
 * Deletes `names` from process.env and blanks their entries in this process's original
 * environment block. Returns the names that are still readable in /proc/self/environ (the
 * block could not be written: not Linux, or /proc/self/mem refused), for the caller to warn.
 */
export function scrubEnviron(names: readonly string[]): string[] {
  const present = names.filter((n) => process.env[n] !== undefined);
  for (const n of present) delete process.env[n];
  if (present.length === 0) return [];
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // fields after "pid (comm) " start at field 3; comm may hold spaces and parentheses
    const fields = stat
      .slice(stat.lastIndexOf(')') + 2)
      .trim()
      .split(' ');
    const start = Number(fields[ENV_START_FIELD - 3]);
    const end = Number(fields[ENV_END_FIELD - 3]);
    if (!(Number.isSafeInteger(start) && Number.isSafeInteger(end) && end > start)) return leftIn(present);
    const fd = openSync('/proc/self/mem', 'r+');
    try {
      const block = Buffer.alloc(end - start);
      readSync(fd, block, 0, block.length, start);
      for (const n of present) {
        const key = Buffer.from(`${n}=`);
        let at = 0;
        for (;;) {
          const i = block.indexOf(key, at);
          if (i < 0) break;
          const stop = block.indexOf(0, i);
          const j = stop < 0 ? block.length : stop;
          // only an entry's start: after a NUL, or the block's first byte
          if (i === 0 || block[i - 1] === 0) writeSync(fd, Buffer.alloc(j - i, 0), 0, j - i, start + i);
          at = j;
        }
      }
    } finally {
      closeSync(fd);
    }
  } catch {
    // not Linux, or /proc/self/mem refused
  }
  return leftIn(present);
}

/** The names among `names` whose `NAME=` entry /proc/self/environ still shows. */
function leftIn(names: readonly string[]): string[] {
  let text: string;
  try {
    text = readFileSync('/proc/self/environ', 'latin1');
  } catch {
    return [];
  }
  const entries = text.split('\0');
  return names.filter((n) => entries.some((e) => e.startsWith(`${n}=`)));
}
