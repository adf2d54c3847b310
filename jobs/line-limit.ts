import { RANK_LINE_MAX_BYTES } from './rank-protocol-constants.ts';
import { escapeRankText } from './rank-text.ts';

/**
 * The longest line a rank (graphrt or a command workload's process) may print. A longer line
 * fails the rank: the reader discards the rest of it up to the newline, so a runaway writer
 * cannot make the worker buffer without bound.
 */
export const MAX_RANK_LINE_BYTES = RANK_LINE_MAX_BYTES;
export const MAX_RANK_LINE_LABEL = '1 MiB (MAX_RANK_LINE_BYTES)';

/** How much of an offending line an error message quotes (UTF-8 bytes, after escaping). */
export const QUOTED_LINE_BYTES = 300;

/**
 * An offending line as an error message quotes it: a rank's stdout line or a record read back
 * from Redis is someone else's text, and the message reaches a terminal, a log and report.md, so
 * it is escaped (jobs/rank-text.ts) and bounded, the cut marked.
 */
export function quoteLine(line: string): string {
  return escapeRankText(line, QUOTED_LINE_BYTES);
}

/**
 * The bounds on what a rank's output may store in the experiment's event stream (Redis), beside
 * the per-line bound above. "Output" is every line that is not a request's final answer: a
 * command workload's stdout/stderr lines, graphrt's non-final lines. Final answers (one per
 * request, so bounded by the plan) and the worker's own events are always stored.
 *
 * - Per rep: a rank stores at most OUTPUT_PER_REP lines / bytes of one request's output; the
 *   rest is dropped by the worker and counted, and one `output-truncated` event (scope `rep`)
 *   before the final answer says how much.
 * - Per experiment: all ranks of all blocks together store at most OUTPUT_PER_EXPERIMENT, counted
 *   in Redis by store/lua/append-event.lua, so many ranks cannot fill Redis between them; the
 *   first output refused writes one `output-truncated` event (scope `experiment`), and everything
 *   dropped is counted in the experiment's budget hash (store/event-budget.ts), which
 *   `orch submit` reports at the end.
 *
 * An event's stored size is its fields' bytes (the tags and the line, capped at MAX_EVENT_BYTES)
 * plus EVENT_OVERHEAD_BYTES, near what a stream entry costs Redis beyond its values.
 */
export const OUTPUT_PER_REP = { lines: 2000, bytes: 256 * 1024 } as const;
export const OUTPUT_PER_EXPERIMENT = { lines: 20_000, bytes: 4 * 1024 * 1024 } as const;
export const EVENT_OVERHEAD_BYTES = 32;
