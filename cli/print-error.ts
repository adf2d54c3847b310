/**
 * How an error reaches the terminal; the exit code and whether a stack shows come from the error
 * registry (jobs/error-codes.ts). A registered failure prints its message and hint without a
 * stack (user input exits 2, transient and deterministic failures exit 1); a bug, or an error
 * nothing classifies, prints its stack and the whole cause chain (exit 1).
 */
import { exitCodeFor, printsStack } from '../jobs/error-codes.ts';
import { OrchError, SpecError } from '../jobs/errors.ts';

export function exitCodeOf(err: unknown): number {
  return exitCodeFor(err);
}

export function formatError(err: unknown): string {
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
