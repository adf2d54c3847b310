/**
 * A capture blocker: a graph arm whose capture fails (torch's "Cannot copy between CPU and CUDA
 * tensors during CUDA graph capture …", a host sync inside the body) is a finding about the
 * user's program, not a fault of the run. The arm is not measured, with the program's message
 * and the user's own source line (the rank library's `frame`, jobs/orch-rank-protocol.ts), once;
 * every other arm is measured and compared; comparisons with the arm are `not_testable`.
 *
 * The reps of such an arm are recorded as failed (jobs/failed-rep.ts) with a reason that starts
 * with CAPTURE_FAILED_PREFIX, so every reader of failure records tells them apart without a
 * second record: `captureBlockerOf(reason)`. The capture stops at the first blocker; the rank
 * library's audit lists the body's others (ranklib/PROTOCOL.md "error", `other_blockers`), which
 * the failure record carries beside its reason (`other_blockers`), so a program's every blocker is
 * named in one run.
 */

import { OrchError } from './errors.ts';
import type { ErrorFrame } from './orch-rank-protocol.ts';
import { escapeRankText } from './rank-text.ts';

export const CAPTURE_FAILED_PREFIX = 'not measured: capture failed: ';

/** One operation a capture refused: the program's message, escaped and bounded (jobs/rank-text.ts), and the user's line. */
export interface BlockerAt {
  message: string;
  frame: ErrorFrame | null;
}

/** One blocker of an arm, as the analysis lists them (an arm has one per line of its program that blocks). */
export interface CaptureBlocker extends BlockerAt {
  arm: string;
}

/** What a blocked arm's answer said: the blocker its capture stopped at, and the others the audit met. */
export interface BlockedArm extends CaptureBlocker {
  others: BlockerAt[];
}

/** The other blockers of an answer's `other_blockers`, escaped as every rank text is. */
export function otherBlockers(
  lines: readonly { message: string; frame: ErrorFrame | null }[] | undefined,
): BlockerAt[] {
  return (lines ?? []).map((b) => ({
    message: escapeRankText(b.message),
    frame: b.frame === null ? null : { file: escapeRankText(b.frame.file, 1024), line: b.frame.line },
  }));
}

/** The failure reason of each rep of a blocked arm: `not measured: capture failed: <message> (at <file>:<line>)`. */
export function captureFailedReason(b: Omit<CaptureBlocker, 'arm'>): string {
  const at = b.frame === null ? '' : ` (at ${escapeRankText(b.frame.file, 1024)}:${b.frame.line})`;
  return `${CAPTURE_FAILED_PREFIX}${escapeRankText(b.message)}${at}`;
}

/** The blocker a failure reason records, or null when the rep failed otherwise. */
export function captureBlockerOf(arm: string, reason: string): CaptureBlocker | null {
  if (!reason.startsWith(CAPTURE_FAILED_PREFIX)) return null;
  const rest = reason.slice(CAPTURE_FAILED_PREFIX.length);
  const m = / \(at (.+):(\d+)\)$/.exec(rest);
  return m
    ? { arm, message: rest.slice(0, m.index), frame: { file: m[1] as string, line: Number(m[2]) } }
    : { arm, message: rest, frame: null };
}

/** A rep request answered CAPTURE_FAILED: the block goes on without the arm (worker/rep-pipeline.ts). */
export class CaptureBlockedError extends OrchError {
  readonly blocker: BlockedArm;

  constructor(blocker: BlockedArm, rank: number, card: string) {
    super('CAPTURE_FAILED', `rank ${rank} on card ${card}: arm ${blocker.arm}: ${captureFailedReason(blocker)}`);
    this.blocker = blocker;
  }
}
