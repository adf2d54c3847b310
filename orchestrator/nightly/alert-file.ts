/**
 * How a line is appended to a nightly alert file, only where jobs/alert-place.ts allows one, so
 * no suite — and no job — makes orch serve append to a file elsewhere (another user's shell
 * profile). The file is created 0600, opened with O_NOFOLLOW (never through a link at its own
 * name), every directory above it resolved and checked to stay under the root (no link in the
 * path leads out), and written only when it is a regular file of orch serve's own user.
 */
import { closeSync, constants, existsSync, fstatSync, mkdirSync, openSync, realpathSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { alertFileProblem, insideRoot as inside } from '../../jobs/alert-place.ts';

export { alertFileProblem, alertRoots } from '../../jobs/alert-place.ts';

/** Appends `line` to `file` (see the file comment); throws an Error naming the file and why, never its content. */
export function appendAlertLine(file: string, roots: string[], line: string): void {
  const problem = alertFileProblem(file, roots);
  if (problem) throw new Error(problem);
  const root = roots.find((r) => inside(r, file))!;
  const parent = dirname(file);
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const realRoot = realpathSync(root);
  const within = (dir: string) => {
    const real = realpathSync(dir);
    if (real !== realRoot && !inside(realRoot, real))
      throw new Error(`alert file ${file}: ${dir} resolves to ${real}, outside ${realRoot} (a link in the path)`);
  };
  // the nearest directory that exists is checked before anything is made under it
  let existing = parent;
  while (!existsSync(existing)) existing = dirname(existing);
  within(existing);
  mkdirSync(parent, { recursive: true, mode: 0o700 });
  within(parent);
  let fd: number;
  try {
    fd = openSync(
      file,
      constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK,
      0o600,
    );
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(
      `alert file ${file}: ${code === 'ELOOP' ? 'it is a symbolic link; alerts are never written through one' : (code ?? 'cannot be opened')}`,
    );
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new Error(`alert file ${file}: not a regular file`);
    if (process.getuid !== undefined && st.uid !== process.getuid())
      throw new Error(`alert file ${file}: owned by uid ${st.uid}, not by this orch serve's user`);
    writeSync(fd, line);
  } finally {
    closeSync(fd);
  }
}
