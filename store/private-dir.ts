/**
 * Per-user private state directories: the card locks live in one (default
 * `$XDG_RUNTIME_DIR/orch/cards`, else `~/.cache/orch/cards`), never in a shared, predictable
 * path such as /tmp/orch-cards, where another local user could create the directory first (and
 * block every card by holding its locks) or plant a symlink that a rank's open follows.
 *
 * A directory is accepted only when it is a real directory (not a symlink), owned by this user,
 * and not writable by group or others; one this creates is 0700.
 */
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { UserInputError } from '../jobs/errors.ts';

/** `$XDG_RUNTIME_DIR/orch` (per user, tmpfs, 0700 by systemd) or `~/.cache/orch`. */
export function defaultStateDir(): string {
  const xdg = process.env.XDG_RUNTIME_DIR;
  return xdg?.startsWith('/') ? join(xdg, 'orch') : join(homedir(), '.cache', 'orch');
}

/** Creates `dir` (0700) if missing; refuses one that another user could write to or swap. */
export function ensurePrivateDir(dir: string, what: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  const uid = process.getuid?.();
  const problem = st.isSymbolicLink()
    ? 'is a symbolic link'
    : !st.isDirectory()
      ? 'is not a directory'
      : uid !== undefined && st.uid !== uid
        ? `is owned by uid ${st.uid}, not by you (uid ${uid})`
        : (st.mode & 0o022) !== 0
          ? `is writable by group or others (mode ${(st.mode & 0o777).toString(8)})`
          : null;
  if (problem !== null) {
    throw new UserInputError(
      'PRIVATE_DIR_UNSAFE',
      `${what} ${dir} ${problem}: another local user could take or redirect what orch keeps there`,
      {
        hint: `use a directory only you own and can write: remove ${dir} if it is not yours, or \`chmod 700 ${dir}\` if it is, or pick another path (default: $XDG_RUNTIME_DIR/orch, else ~/.cache/orch)`,
      },
    );
  }
  return dir;
}

/**
 * Opens (creating, 0600) the card's lock file without following a symlink and returns the open
 * file description; a symlink or another user's file there is refused. The worker opens it so to
 * hand one description to the processes of a rank (worker/graphrt-runner.ts).
 */
export function openLockFile(path: string): number {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UserInputError(
      'PRIVATE_DIR_UNSAFE',
      `card lock ${path}: cannot create it (${code === 'ELOOP' ? 'it is a symbolic link' : code})`,
      {
        hint: `remove ${path}; the lock directory must hold only orch's lock files`,
        cause: err,
      },
    );
  }
  try {
    const st = fstatSync(fd);
    const uid = process.getuid?.();
    if (!st.isFile() || (uid !== undefined && st.uid !== uid)) {
      throw new UserInputError(
        'PRIVATE_DIR_UNSAFE',
        `card lock ${path} is ${st.isFile() ? `owned by uid ${st.uid}` : 'not a regular file'}`,
        {
          hint: `remove ${path}; the lock directory must hold only orch's lock files`,
        },
      );
    }
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  return fd;
}

/** Creates the card's lock file, so the rank that opens it later opens this regular file. */
export function ensureLockFile(path: string): void {
  closeSync(openLockFile(path));
}
