/**
 * A capture blocker: a graph arm whose capture fails (torch's "Cannot copy between CPU and CUDA
 * tensors during CUDA graph capture …", a host sync inside the body) is a finding about the
 * user's program, not a fault of the run. The arm is not measured, with the program's message
 * and the user's own source line (the rank library's `frame`, jobs/orch-rank-protocol.ts), once;
 * every other arm is measured and compared; comparisons with the arm are `not_testable`.
 *
 * The reps of such an arm are recorded as failed (jobs/failed-rep.ts) with a reason that starts
 * with CAPTURE_FAILED_PREFIX, so every reader of failure records tells them apart without a
 * second record: `captureBlockerOf(reason)`.
 */

import { OrchError } from './errors.ts';
import type { ErrorFrame } from './orch-rank-protocol.ts';
import { escapeRankText } from './rank-text.ts';

export const CAPTURE_FAILED_PREFIX = 'not measured: capture failed: ';

export interface CaptureBlocker {
  arm: string;
  /** the program's message, escaped and bounded (jobs/rank-text.ts) */
  message: string;
  frame: ErrorFrame | null;
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
  readonly blocker: CaptureBlocker;

  constructor(blocker: CaptureBlocker, rank: number, card: string) {
    super('CAPTURE_FAILED', `rank ${rank} on card ${card}: arm ${blocker.arm}: ${captureFailedReason(blocker)}`);
    this.blocker = blocker;
  }
}
