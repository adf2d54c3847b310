/**
 * A night's failure reason without a byte of the file it failed on. The reason is stored in
 * Redis (the job's failedReason), in the history, in the alert file, the webhook body and on the
 * dashboard's nightly page, where others read it; a spec error echoes the file's keys and values
 * (a key is the whole line when the file is not YAML), so a spec path that names another file
 * would publish its lines. The reason names the file, the line and the schema's complaint; the
 * spec's own problems in full are for its owner: `orch validate FILE`.
 */
import { SpecError, type SpecIssue } from '../../jobs/errors.ts';
import { messageOf } from '../../jobs/message-of.ts';

/** How many of a spec's problems a reason lists. */
const MAX_ISSUES = 5;
/** A path made of identifiers and indices is the schema's; anything else came from the file. */
const SCHEMA_PATH = /^[A-Za-z_][A-Za-z0-9_]{0,40}(\.[A-Za-z_][A-Za-z0-9_]{0,40}|\[\d{1,6}\]){0,8}$/;

/** Quoted text (the file's values and keys) left out; the first line only (a YAML code frame follows it). */
function withoutQuotes(text: string, max: number): string {
  return (text.split('\n')[0] ?? '').replace(/"(?:[^"\\]|\\.)*"/g, '"…"').slice(0, max);
}

function issueLine(i: SpecIssue): string {
  const where = i.line === null ? i.file : `${i.file}:${i.line}`;
  const path = i.path === '' ? '(root)' : SCHEMA_PATH.test(i.path) ? i.path : '(a key of the file)';
  return `${where} ${path}: ${withoutQuotes(i.message, 300)}`;
}

/** `err` as a failure reason that quotes nothing read from a file. */
export function contentFreeReason(err: unknown): string {
  if (err instanceof SpecError) {
    const shown = err.issues.slice(0, MAX_ISSUES).map(issueLine);
    const more = err.issues.length > MAX_ISSUES ? [`… and ${err.issues.length - MAX_ISSUES} more`] : [];
    const file = err.issues[0]?.file;
    return [...shown, ...more, ...(file ? [`(orch validate ${file} shows each problem and its fix)`] : [])].join('\n');
  }
  // orch's own errors (a history fault names the database, what failed and the fix) need more room
  return withoutQuotes(messageOf(err), 1000);
}
