/**
 * A credential in a file (the cluster secret, the submit token): read only from a regular file of
 * the caller's own that no one else may read, as the Redis URL file. The content never appears in
 * a message; the refusals name the file, its mode and owner, and the fix.
 */
import { readFileSync, type Stats, statSync } from 'node:fs';
import type { UserInputCode } from '../jobs/error-codes.ts';
import { UserInputError } from '../jobs/errors.ts';

export function readPrivateFile(file: string, o: { what: string; code: UserInputCode; hint: string }): string {
  let st: Stats;
  try {
    st = statSync(file);
  } catch (err) {
    throw new UserInputError(o.code, `${o.what} file ${file}: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`, {
      hint: o.hint,
    });
  }
  if (!st.isFile() || (st.mode & 0o077) !== 0 || (process.getuid !== undefined && st.uid !== process.getuid())) {
    throw new UserInputError(
      o.code,
      `${o.what} file ${file}: mode ${(st.mode & 0o777).toString(8)}, owner uid ${st.uid}: it must be a regular file of yours readable by you alone`,
      {
        hint: `chmod 600 ${file}`,
      },
    );
  }
  return readFileSync(file, 'utf8');
}
