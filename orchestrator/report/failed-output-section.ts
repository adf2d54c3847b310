/**
 * What the ranks of a failed block printed last (jobs/rank-output-tail.ts), where the user looks:
 * report.md's "Output of failed ranks" section, one part per failed rank of each failed block,
 * and the same lines on submit's stderr at its end. The lines, card and host come escaped from
 * the record's schema (jobs/rank-output-tail.ts escapes them as they are read back from Redis: one
 * line each, no control characters); report.md holds the lines in indented code blocks, which no
 * text inside can end or turn into markup.
 */
import type { RankOutputTail } from '../../jobs/rank-output-tail.ts';
import type { Analysis } from '../stats/types.ts';
import { markdownCode } from './markdown-code.ts';

/**
 * Which rank it was. The card and host are names a worker registered, so anyone who reaches Redis
 * chooses them: in report.md they are code spans, never a link or an image in a heading.
 */
function whose(t: RankOutputTail, name: (text: string) => string = (text) => text): string {
  return `block ${t.block}, rank ${t.rank} (card ${name(t.card)} on ${name(t.host)}, attempt ${t.attempt})`;
}

function streams(t: RankOutputTail): { name: 'stdout' | 'stderr'; lines: string[] }[] {
  return [
    { name: 'stdout' as const, lines: t.stdout },
    { name: 'stderr' as const, lines: t.stderr },
  ].filter((s) => s.lines.length > 0);
}

export function failedOutputSection(a: Pick<Analysis, 'failed_rank_output'>): string[] {
  const tails = a.failed_rank_output ?? [];
  if (tails.length === 0) return [];
  const out = ['## Output of failed ranks', ''];
  for (const t of tails) {
    out.push(`### ${whose(t, markdownCode)}`, '');
    for (const s of streams(t)) {
      out.push(`${s.name}, its last ${s.lines.length} line${s.lines.length === 1 ? '' : 's'}:`, '');
      out.push(...s.lines.map((l) => `    ${l}`), '');
    }
  }
  return out;
}

/** The same for a terminal: a heading line per rank, each line under it marked with its stream. */
export function failedOutputLines(a: Pick<Analysis, 'failed_rank_output'>): string[] {
  return (a.failed_rank_output ?? []).flatMap((t) => [
    `${whose(t)} printed last:`,
    ...streams(t).flatMap((s) => s.lines.map((l) => `  ${s.name} | ${l}`)),
  ]);
}
