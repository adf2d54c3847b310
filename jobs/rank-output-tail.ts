/**
 * The last lines a rank printed, kept for the record of its failure: a user reads why their
 * program failed in the report and on the terminal (report.md "Output of failed ranks"), not in
 * events.jsonl. The event stream is a live view that may cut and drop (worker/event-stream.ts);
 * this record is written once, with the failure, by the worker that saw the rank fail
 * (store/lua/fail-block.lua), and is bounded: RANK_OUTPUT_TAIL_LINES lines per stream, each at
 * most RANK_OUTPUT_LINE_MAX_BYTES and escaped as every rank text is (jobs/rank-text.ts), and at
 * most RANK_OUTPUT_RECORDS_MAX records per experiment. Read back, the record is escaped again
 * (RankOutputTailSchema): anyone who reaches Redis can write it, ESC in its lines, host or card.
 */
import { z } from 'zod';
import { escapeRankText } from './rank-text.ts';

/** The lines of each stream kept: the last ones, where a program says why it stopped. */
export const RANK_OUTPUT_TAIL_LINES = 20;
/** One kept line's bound (UTF-8 bytes, after escaping): a progress bar or a tensor dump is cut, marked. */
export const RANK_OUTPUT_LINE_MAX_BYTES = 512;
/**
 * Records kept per experiment: a failed rank's record is at most 2 × 20 × 512 bytes (20 KiB),
 * so an experiment's are at most about 640 KiB of Redis, whatever its blocks, attempts and ranks.
 */
export const RANK_OUTPUT_RECORDS_MAX = 32;

const TailLines = z.array(z.string().max(RANK_OUTPUT_LINE_MAX_BYTES)).max(RANK_OUTPUT_TAIL_LINES);

/** What a rank printed last, each stream on its own (interleaving two pipes has no true order). */
export const RankOutputSchema = z.strictObject({ stdout: TailLines, stderr: TailLines });
export type RankOutput = z.infer<typeof RankOutputSchema>;

/**
 * One failed rank's record: which block attempt, rank and card, and its output. Its text comes out
 * escaped whoever wrote it: a record is read from Redis, which is no proof that a worker escaped
 * it. escapeRankText changes nothing of its own output at the same bound (that output has no
 * control, bidi or surrogate left, no workflow command at its start, and fits the bound, the cut
 * marker included), so a worker's record reads back as it was written and only a planted one changes.
 */
export const RankOutputTailSchema = RankOutputSchema.extend({
  block: z.int().min(0),
  attempt: z.int().min(0),
  rank: z.int().min(0),
  card: z.string(),
  host: z.string(),
}).transform((t) => ({
  ...t,
  card: escapeRankText(t.card),
  host: escapeRankText(t.host),
  stdout: t.stdout.map((l) => escapeRankText(l, RANK_OUTPUT_LINE_MAX_BYTES)),
  stderr: t.stderr.map((l) => escapeRankText(l, RANK_OUTPUT_LINE_MAX_BYTES)),
}));
export type RankOutputTail = z.infer<typeof RankOutputTailSchema>;

/** The record's field in `<prefix>:experiment:<id>:rank-output`. */
export function rankOutputField(t: Pick<RankOutputTail, 'block' | 'attempt' | 'rank'>): string {
  return `${t.block}/${t.attempt}/${t.rank}`;
}

/** The last lines of a rank's two streams as they arrive, each escaped and bounded when kept. */
export class OutputTail {
  private readonly lines: RankOutput = { stdout: [], stderr: [] };

  push(stream: 'stdout' | 'stderr', line: string): void {
    const kept = this.lines[stream];
    kept.push(escapeRankText(line, RANK_OUTPUT_LINE_MAX_BYTES));
    if (kept.length > RANK_OUTPUT_TAIL_LINES) kept.shift();
  }

  /** A new process's output starts (a per_rep command's next rep): the last one's is dropped. */
  clear(): void {
    this.lines.stdout.length = 0;
    this.lines.stderr.length = 0;
  }

  output(): RankOutput {
    return { stdout: [...this.lines.stdout], stderr: [...this.lines.stderr] };
  }
}

/** Whether a rank printed anything worth a record. */
export function printedAnything(o: RankOutput): boolean {
  return o.stdout.length > 0 || o.stderr.length > 0;
}

/**
 * What a report shows: the records of the blocks that ended failed, each rank's of its block's
 * latest failed attempt only (an earlier attempt that failed the same way says it again), in
 * block and rank order.
 */
export function failedBlocksOutput(
  records: readonly RankOutputTail[],
  failedBlocks: ReadonlySet<number>,
): RankOutputTail[] {
  const latest = new Map<number, number>();
  for (const r of records)
    if (failedBlocks.has(r.block)) latest.set(r.block, Math.max(latest.get(r.block) ?? 0, r.attempt));
  return records.filter((r) => latest.get(r.block) === r.attempt).sort((a, b) => a.block - b.block || a.rank - b.rank);
}
