/**
 * Reading a file that someone else may have put in place of the one orch expects: a program's
 * report in a shared directory, a spec file named on the command line. Only a regular file, never
 * a FIFO or a device (a FIFO with no writer blocks a synchronous read for ever, and with it the
 * whole process: a root worker's heartbeats, leases and every other gang; /dev/zero never ends),
 * at most `max` bytes, and, with `followLinks: false`, never through a symlink at the path itself.
 */
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';

export type RegularFileRead =
  | { ok: true; bytes: Buffer }
  | { ok: false; reason: string; code: 'missing' | 'not_regular' | 'too_large' | 'unreadable' };

/** `path`'s bytes, or why they were not read. */
export function readRegularFile(path: string, max: number, o: { followLinks: boolean }): RegularFileRead {
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO opens at once instead of waiting for a writer, and is refused below;
    // O_NOCTTY: a terminal never becomes this process's controlling one.
    const flags =
      constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY | (o.followLinks ? 0 : constants.O_NOFOLLOW);
    fd = openSync(path, flags);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { ok: false, code: 'missing', reason: 'no such file' };
    if (code === 'ELOOP') return { ok: false, code: 'not_regular', reason: 'a symbolic link, not the file itself' };
    return { ok: false, code: 'unreadable', reason: `cannot be opened (${code ?? String(err)})` };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { ok: false, code: 'not_regular', reason: `${kindOf(stat)}, not a regular file` };
    if (stat.size > max)
      return { ok: false, code: 'too_large', reason: `${stat.size} bytes, more than the ${max} read` };
    // the file may grow between the fstat and the read: one byte more than the bound says so
    const bytes = readAtMost(fd, max + 1);
    if (bytes.length > max) return { ok: false, code: 'too_large', reason: `more than the ${max} bytes read` };
    return { ok: true, bytes };
  } catch (err) {
    return {
      ok: false,
      code: 'unreadable',
      reason: `cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
    };
  } finally {
    closeSync(fd);
  }
}

/** Up to `max` bytes from `fd`, fewer at its end. */
export function readAtMost(fd: number, max: number): Buffer {
  const buf = Buffer.alloc(max);
  let n = 0;
  while (n < max) {
    const got = readSync(fd, buf, n, max - n, null);
    if (got === 0) break;
    n += got;
  }
  return buf.subarray(0, n);
}

/** What a path is when it is not a regular file: "a FIFO (named pipe)". */
export function kindOf(stat: Stats): string {
  if (stat.isDirectory()) return 'a directory';
  if (stat.isFIFO()) return 'a FIFO (named pipe)';
  if (stat.isCharacterDevice()) return 'a character device';
  if (stat.isBlockDevice()) return 'a block device';
  if (stat.isSocket()) return 'a socket';
  if (stat.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}
