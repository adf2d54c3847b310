/**
 * How an error reaches the terminal; the exit code and whether a stack shows come from the error
 * registry (jobs/error-codes.ts). A registered failure prints its message and hint without a
 * stack (user input exits 2, transient and deterministic failures exit 1); a bug, or an error
 * nothing classifies, prints its stack and the whole cause chain (exit 1).
 *
 * Under --json the error is one JSON object on stdout (jsonError) and nothing else is printed
 * there; a bug's stack still goes to stderr.
 *
 * A message may quote what orch read from someone else: a record read back from Redis
 * (STORED_RECORD_INVALID), a rank's line, a results file. On the terminal each of its lines is
 * escaped (jobs/rank-text.ts), whichever path built the message and whether or not it escaped.
 */
import { codeOf, ERROR_CODES, exitCodeFor, kindOf, printsStack } from '../jobs/error-codes.ts';
import { OrchError, SpecError, type SpecIssue } from '../jobs/errors.ts';
import { messageOf } from '../jobs/message-of.ts';
import { escapeRankText } from '../jobs/rank-text.ts';

export function exitCodeOf(err: unknown): number {
  return exitCodeFor(err);
}

/**
 * Fields a command adds to its --json error object (validate: every file's result), carried
 * by the error it throws so the object stays one.
 */
const JSON_EXTRA = Symbol('orch.jsonExtra');

export function withJsonExtra<E extends Error>(err: E, extra: Record<string, unknown>): E {
  return Object.assign(err, { [JSON_EXTRA]: extra });
}

export interface JsonError {
  ok: false;
  error: {
    /** a code of jobs/error-codes.ts, or INTERNAL for an error nothing classifies (a bug) */
    code: string;
    kind: string;
    message: string;
    hint: string | null;
    exit_code: number;
    issues?: SpecIssue[];
  };
  [extra: string]: unknown;
}

export function jsonError(err: unknown): JsonError {
  const code = codeOf(err);
  const kind = kindOf(err);
  const message = messageOf(err);
  const hint =
    (err instanceof OrchError ? err.hint : undefined) ??
    (code !== null ? (ERROR_CODES[code] as { hint?: string }).hint : undefined) ??
    (printsStack(err) ? 'this is a bug in orch; please report it with the stack printed on stderr' : null);
  const extra =
    typeof err === 'object' && err !== null
      ? ((err as { [JSON_EXTRA]?: Record<string, unknown> })[JSON_EXTRA] ?? {})
      : {};
  return {
    ok: false,
    ...extra,
    error: {
      code: code ?? 'INTERNAL',
      kind: kind === 'unclassified' ? 'bug' : kind,
      message,
      hint,
      exit_code: exitCodeOf(err),
      ...(err instanceof SpecError ? { issues: err.issues } : {}),
    },
  };
}

/** `text`'s lines, each escaped: the message keeps its line breaks, and nothing else runs. */
function printable(text: string): string {
  return text
    .split('\n')
    .map((l) => escapeRankText(l))
    .join('\n');
}

export function formatError(err: unknown): string {
  return printable(errorText(err));
}

function errorText(err: unknown): string {
  if (err instanceof SpecError) {
    const files = new Set(err.issues.map((i) => i.file)).size;
    const n = err.issues.length;
    return `${err.message}\norch: ${n} problem${n === 1 ? '' : 's'} in ${files} file${files === 1 ? '' : 's'}\n`;
  }
  if (err instanceof OrchError && !printsStack(err)) {
    return `orch: ${err.message}\n${err.hint ? `  hint: ${err.hint}\n` : ''}`;
  }
  const lines = ['orch: internal error (this is a bug in orch; please report it with the lines below)'];
  let cause: unknown = err;
  for (let depth = 0; cause !== undefined && depth < 10; depth++) {
    const text = cause instanceof Error ? (cause.stack ?? `${cause.name}: ${cause.message}`) : String(cause);
    lines.push(depth === 0 ? text : `caused by: ${text}`);
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return `${lines.join('\n')}\n`;
}
