/**
 * The dashboard's own token, when the user gave none: made once (24 random bytes, hex) in
 * `<state dir>/dashboard-token` (default `$XDG_RUNTIME_DIR/orch`, else `~/.cache/orch`: a 0700
 * directory only this user may write), mode 0600, created with O_EXCL|O_NOFOLLOW so nothing
 * planted there is followed or overwritten; read again at the next start, so a browser's cookie
 * outlives a restart. Another user's file, a loose mode or a symlink there is refused.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, lstatSync, openSync, type Stats, writeSync } from 'node:fs';
import { join } from 'node:path';
import { UserInputError } from '../../jobs/errors.ts';
import { defaultStateDir, ensurePrivateDir } from '../../store/private-dir.ts';
import { readTokenFile } from './auth.ts';

export const TOKEN_FILE_NAME = 'dashboard-token';

export interface DashboardTokenFile {
  file: string;
  token: string;
  /** true when this start made it */
  created: boolean;
}

export function ensureDashboardToken(stateDir = defaultStateDir()): DashboardTokenFile {
  const dir = ensurePrivateDir(stateDir, 'the dashboard token directory');
  const file = join(dir, TOKEN_FILE_NAME);
  const st = lstatOrNull(file);
  if (st?.isSymbolicLink()) {
    throw new UserInputError(
      'DASHBOARD_TOKEN',
      `the dashboard token file ${file} is a symbolic link: orch reads its token only from a file it made`,
      {
        hint: `remove ${file}; orch dashboard makes a new one at its next start`,
      },
    );
  }
  if (st) return { file, token: readTokenFile(file, 'the dashboard token file'), created: false };
  const token = randomBytes(24).toString('hex');
  let fd: number;
  try {
    fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (err) {
    throw new UserInputError(
      'DASHBOARD_TOKEN',
      `the dashboard token file ${file}: cannot create it (${(err as NodeJS.ErrnoException).code ?? err})`,
      {
        hint: `check that ${dir} is yours and writable, or pass --token-file FILE (mode 600)`,
        cause: err,
      },
    );
  }
  try {
    writeSync(fd, `${token}\n`);
  } finally {
    closeSync(fd);
  }
  return { file, token, created: true };
}

function lstatOrNull(file: string): Stats | null {
  try {
    return lstatSync(file);
  } catch {
    return null;
  }
}
