/**
 * The Capture blockers section of report.md, right under the title: each graph arm whose capture
 * failed in the user's program, with the program's message and the user's own source line
 * (jobs/capture-blocker.ts), once per place in the program: the one the capture stopped at and the
 * others the rank library's audit met. Its comparisons are not testable; every other arm was measured.
 *
 * The message and the source file are the program's text, read back from Redis with the failure
 * record: each is escaped (jobs/rank-text.ts, which changes nothing of what the worker escaped)
 * and shown as inline code (markdown-code.ts), so no Markdown in it renders (an image that calls
 * out, a link, a backtick that ends the span).
 */
import { escapeRankText } from '../../jobs/rank-text.ts';
import type { Analysis } from '../stats/types.ts';
import { markdownCode } from './markdown-code.ts';

export function captureBlockersSection(a: Pick<Analysis, 'capture_blockers'>): string[] {
  const blockers = a.capture_blockers ?? [];
  if (blockers.length === 0) return [];
  const arms = new Set(blockers.map((b) => b.arm)).size;
  return [
    '## Capture blockers',
    '',
    `${arms === 1 ? 'One arm was' : `${arms} arms were`} not measured: capture failed in the program${blockers.length > arms ? `, at ${blockers.length} places (the first where the capture stopped, the others found by the rank library running the step once more)` : ''}. Fix ${blockers.length === 1 ? 'it' : 'each'} (move host work — a host-built tensor, a host sync, a CPU→GPU copy from unpinned memory — out of the captured step, writing device state in place) and run again; every other arm was measured and compared, and the comparisons with ${arms === 1 ? 'this arm are' : 'these arms are'} not testable.`,
    '',
    ...blockers.map(
      (b) =>
        `- arm ${b.arm}${b.frame === null ? '' : ` at ${markdownCode(`${escapeRankText(b.frame.file, 1024)}:${b.frame.line}`)}`}: ${markdownCode(escapeRankText(b.message))}`,
    ),
    '',
  ];
}
