/**
 * results/<id>/ opened so that no planted link is followed. A local user who can write to the
 * results root could put a symbolic link at results/<id> (or at a file in it) before the run;
 * a writer that followed it would chmod and write the spec, with its run.env values, outside the
 * results root. So:
 *   - the id is one path component (no `/`, no `..`): results/<id> is a child of the root;
 *   - results/<id> is made 0700 by this writer, or, written before (a report written again), must
 *     be a real directory of this user; it is then opened with O_DIRECTORY | O_NOFOLLOW and every
 *     file is opened through that open directory (/proc/self/fd/<fd>/<name> on Linux), so a
 *     directory swapped for a link after the check is not followed either;
 *   - each file is opened with O_NOFOLLOW (a link there is refused), must be a regular file of
 *     this user, and is made 0600 through its descriptor (never chmod by path, which follows).
 * The root itself is the caller's choice (`--results`, a suite's `results`) and may be a link.
 * Every refusal is a UserInputError (RESULTS_PATH_UNSAFE) naming the path and the fix.
 */
import {
  closeSync,
  constants,
  existsSync,
  fchmodSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { UserInputError } from '../../jobs/errors.ts';

/** An experiment id as one file name: what ExperimentStore.newId makes, and no `.`/`..`. */
const ID = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}$/;

function unsafe(path: string, problem: string, cause?: unknown): UserInputError {
  return new UserInputError('RESULTS_PATH_UNSAFE', `results path ${path} ${problem}; nothing was written there`, {
    hint: `remove ${path} (orch makes it itself, 0700, and follows no link), or pass another results root (--results DIR)`,
    ...(cause === undefined ? {} : { cause }),
  });
}

function linkTarget(path: string): string {
  try {
    return ` (to ${readlinkSync(path)})`;
  } catch {
    return '';
  }
}

export class ResultsOutDir {
  private constructor(
    /** results/<id> as the user names it (messages, WrittenResults.dir) */
    readonly dir: string,
    private readonly fd: number,
    /** the path files are opened under: the open directory itself where /proc shows it */
    private readonly base: string,
  ) {}

  /** Makes (0700) or reopens `root/id`; refuses a link, another user's directory, or an id that is no file name. */
  static open(root: string, id: string): ResultsOutDir {
    const dir = join(root, id);
    if (!ID.test(id))
      throw unsafe(dir, `names no results directory: the experiment id ${JSON.stringify(id)} is not one file name`);
    mkdirSync(root, { recursive: true, mode: 0o700 });
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let fd: number;
    try {
      fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // Linux answers ENOTDIR for a link opened O_DIRECTORY | O_NOFOLLOW; lstat says which it is
      if (code === 'ELOOP' || code === 'ENOTDIR')
        throw unsafe(
          dir,
          lstatSync(dir).isSymbolicLink() ? `is a symbolic link${linkTarget(dir)}` : 'is not a directory',
          err,
        );
      throw err;
    }
    try {
      const st = fstatSync(fd);
      const uid = process.getuid?.();
      if (uid !== undefined && st.uid !== uid) throw unsafe(dir, `is owned by uid ${st.uid}, not by you (uid ${uid})`);
      fchmodSync(fd, 0o700);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    const viaFd = `/proc/self/fd/${fd}`;
    return new ResultsOutDir(dir, fd, existsSync(viaFd) ? viaFd : dir);
  }

  /**
   * An existing results directory the user named (`orch report --from DIR`): DIR is the user's
   * choice and may be reached through a link; the files written in it still follow none.
   */
  static existing(dir: string): ResultsOutDir {
    let fd: number;
    try {
      fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') throw unsafe(dir, 'is not a directory', err);
      throw err;
    }
    const viaFd = `/proc/self/fd/${fd}`;
    return new ResultsOutDir(dir, fd, existsSync(viaFd) ? viaFd : dir);
  }

  /**
   * The path to open `name` by, inside the open directory: for a writer of its own (events.jsonl,
   * store/event-log.ts exportJsonl), which must open it O_NOFOLLOW too.
   */
  pathOf(name: string): string {
    return join(this.base, name);
  }

  /** Writes `name` (0600), refusing a link or anything but this user's regular file there. */
  write(name: string, data: string): void {
    const shown = join(this.dir, name);
    let fd: number;
    try {
      fd = openSync(
        this.pathOf(name),
        constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
        0o600,
      );
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ELOOP')
        throw unsafe(shown, `is a symbolic link${linkTarget(shown)}`, err);
      throw err;
    }
    try {
      const st = fstatSync(fd);
      const uid = process.getuid?.();
      if (!st.isFile()) throw unsafe(shown, 'is not a regular file');
      if (uid !== undefined && st.uid !== uid)
        throw unsafe(shown, `is owned by uid ${st.uid}, not by you (uid ${uid})`);
      fchmodSync(fd, 0o600);
      const bytes = Buffer.from(data, 'utf8');
      for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off);
    } finally {
      closeSync(fd);
    }
  }

  close(): void {
    closeSync(this.fd);
  }
}
