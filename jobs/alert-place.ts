/**
 * Where a nightly alert file may be: only under the suite's results root or a directory
 * `orch serve`'s operator named in ORCH_ALERT_DIR (`:`-separated), so no suite makes orch serve
 * append to a file elsewhere (/etc/cron.d, another user's shell profile). Lexical, pure: `orch
 * validate` refuses such a suite, `orch nightly install` again, and
 * orchestrator/nightly/alert-file.ts checks it once more, against links, before each write.
 */
import { isAbsolute, relative, resolve, sep } from 'node:path';

export const ALERT_DIR_ENV = 'ORCH_ALERT_DIR';

/** The directories an alert file may be under: the results root, then ORCH_ALERT_DIR's. */
export function alertRoots(resultsRoot: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const extra = (env[ALERT_DIR_ENV] ?? '').split(':').filter((d) => d !== '' && isAbsolute(d));
  return [resolve(resultsRoot), ...extra.map((d) => resolve(d))];
}

/** `path` lies strictly below `root` (lexically). */
export function insideRoot(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
}

/** Why `file` may not be an alert file (lexically: not under any root), or null. */
export function alertFileProblem(file: string, roots: string[]): string | null {
  if (!isAbsolute(file)) return `alert file ${file} is not an absolute path`;
  if (roots.some((r) => insideRoot(r, file))) return null;
  return `alert file ${file} is outside the results root and ${ALERT_DIR_ENV} (${roots.join(', ')})`;
}
