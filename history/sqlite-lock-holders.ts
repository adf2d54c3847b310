/**
 * Who holds a SQLite file's write lock, for the message of a write that stayed SQLITE_BUSY:
 * SQLite takes POSIX (fcntl) locks, which Linux lists in /proc/locks with the holder's pid and
 * the file's device and inode. In WAL mode the write lock is a WRITE lock on the `-shm` file; in
 * rollback mode, on the database file itself. Readers hold READ locks and are not named. Best
 * effort: off Linux, or when /proc cannot be read, nobody is named.
 */
import { readFileSync, statSync } from 'node:fs';

/** Bounds what one message may carry: a few holders, a short command line each. */
const MAX_HOLDERS = 4;
const MAX_COMMAND_CHARS = 120;

export interface LockHolder {
  pid: number;
  /** its command line, shortened; null when /proc does not show it */
  command: string | null;
}

export function sqliteLockHolders(file: string, locks = readProc('/proc/locks')): LockHolder[] {
  if (locks === null) return [];
  const ids = new Set(
    [file, `${file}-shm`].flatMap((f) => {
      try {
        const st = statSync(f);
        // /proc/locks writes the device as MAJOR:MINOR in hex (Linux's new_encode_dev split).
        const major = (st.dev >> 8) & 0xfff;
        const minor = (st.dev & 0xff) | ((st.dev >> 12) & 0xfff00);
        return [`${major.toString(16).padStart(2, '0')}:${minor.toString(16).padStart(2, '0')}:${st.ino}`];
      } catch {
        return [];
      }
    }),
  );
  const pids = new Set<number>();
  for (const line of locks.split('\n')) {
    // `1: POSIX  ADVISORY  WRITE 32368 fe:00:2147722 120 120` (a blocked waiter's line has `->`)
    const m = /^\d+:\s+POSIX\s+\S+\s+WRITE\s+(\d+)\s+([0-9a-f]+:[0-9a-f]+:\d+)\s/.exec(line);
    if (m && ids.has(m[2]!) && Number(m[1]) !== process.pid) pids.add(Number(m[1]));
  }
  return [...pids].slice(0, MAX_HOLDERS).map((pid) => {
    const cmd = readProc(`/proc/${pid}/cmdline`)?.split('\0').filter(Boolean).join(' ').replace(/\s+/g, ' ') ?? null;
    return { pid, command: cmd ? cmd.slice(0, MAX_COMMAND_CHARS) : null };
  });
}

function readProc(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}
