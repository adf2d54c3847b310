/**
 * The identity gate's judgement for a resident command rank (ranklib/PROTOCOL.md "identity"):
 * the program returns, per step, one hash per named output; orch compares them step by step and
 * output by output, as graphrt compares its own. A program that judged itself could pass a gate
 * it failed.
 */
import { createHash } from 'node:crypto';

/** One step's hashes, by output name. */
export type StepHashes = Record<string, string>;

export interface IdentityVerdict {
  pass: boolean;
  /** 1-based replay where graph and eager first differ, null when they never do */
  first_bad_replay: number | null;
  /** the first output (in `outputs` order, then any other name) that differs there */
  first_bad_output: string | null;
}

/**
 * Compares eager step k with graph replay k for k = 1..replays. A missing step or output counts as
 * a difference (a program that hashed fewer replays than asked did not show identity).
 */
export function compareIdentity(
  eager: readonly StepHashes[],
  graph: readonly StepHashes[],
  replays: number,
  outputs: readonly string[],
): IdentityVerdict {
  for (let k = 0; k < replays; k++) {
    const e = eager[k];
    const g = graph[k];
    const names = [...new Set([...outputs, ...Object.keys(e ?? {}), ...Object.keys(g ?? {})])];
    const bad =
      e === undefined || g === undefined ? (names[0] ?? null) : (names.find((n) => e[n] !== g[n]) ?? undefined);
    if (bad !== undefined) return { pass: false, first_bad_replay: k + 1, first_bad_output: bad };
  }
  return { pass: true, first_bad_replay: null, first_bad_output: null };
}

/**
 * One 16-hex-digit hash of a step's outputs (name and hash of each, in name order), for records
 * that keep one hash per step as graphrt's do.
 */
export function stepHash(step: StepHashes): string {
  const text = Object.keys(step)
    .sort()
    .map((n) => `${n}=${step[n]}`)
    .join('\n');
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}
