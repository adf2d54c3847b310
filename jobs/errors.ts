/**
 * The one error hierarchy of orch. Every error that crosses a process or a queue boundary is an
 * OrchError with a permanent `code` from the registry (jobs/error-codes.ts: its kind decides
 * retry and exit code), a `hint` that says what to do, and the original `cause`.
 *
 * - UserInputError: the user can fix it (bad spec, bad flag, missing binary); only codes of
 *   kind user-input. The CLI prints it without a stack and exits 2.
 * - An error without a registered code reaching main() is a bug: stack and cause chain, exit 1.
 */
import type { ErrorCode, UserInputCode } from './error-codes.ts';

export interface OrchErrorOptions {
  hint?: string;
  cause?: unknown;
}

export class OrchError extends Error {
  readonly code: ErrorCode;
  readonly hint: string | undefined;

  constructor(code: ErrorCode, message: string, options: OrchErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.hint = options.hint;
  }
}

/** A problem the user can fix; printed without a stack, exit code 2. */
export class UserInputError extends OrchError {
  declare readonly code: UserInputCode;

  constructor(code: UserInputCode, message: string, options: OrchErrorOptions = {}) {
    super(code, message, options);
  }
}

/** One problem found in a spec file: where it is and how to fix it. */
export interface SpecIssue {
  file: string;
  line: number | null;
  path: string;
  message: string;
  fix?: string;
}

/** A spec (or cluster file) that failed validation: every issue, not only the first. */
export class SpecError extends UserInputError {
  readonly issues: SpecIssue[];

  constructor(issues: SpecIssue[]) {
    super('SPEC_INVALID', issues.map(formatSpecIssue).join('\n'));
    this.issues = issues;
  }
}

/** `configs/x.yaml:7 toggles[2]: unknown toggle "pld" — did you mean "pdl"?` */
export function formatSpecIssue(i: SpecIssue): string {
  const where = i.line === null ? i.file : `${i.file}:${i.line}`;
  const path = i.path === '' ? '(root)' : i.path;
  return `${where} ${path}: ${i.message}${i.fix ? ` — ${i.fix}` : ''}`;
}
