/**
 * The longest line a rank (graphrt or a command workload's process) may print. A longer line
 * fails the rank: the reader discards the rest of it up to the newline, so a runaway writer
 * cannot make the worker buffer without bound.
 */
export const MAX_RANK_LINE_BYTES = 1024 * 1024;
export const MAX_RANK_LINE_LABEL = '1 MiB (MAX_RANK_LINE_BYTES)';

/** How much of an offending line an error message quotes. */
export const QUOTED_LINE_CHARS = 300;

export function quoteLine(line: string): string {
  return line.length > QUOTED_LINE_CHARS ? `${line.slice(0, QUOTED_LINE_CHARS)}… (${line.length} chars)` : line;
}
