import type { z } from 'zod';
import { escapeRankText } from './rank-text.ts';

/**
 * `rep.step_ms.1: Invalid input: expected number, received null`: each issue's path (under
 * `prefix`, e.g. the line's type) and message, so a refused line or record says where it is wrong.
 * Every record described is someone else's (a rank's line, a Redis record, a results file): its
 * keys become the path and its `type` the prefix, so each issue is escaped (jobs/rank-text.ts).
 */
export function describeIssues(error: z.ZodError, prefix = '', max = Infinity): string {
  const shown = error.issues
    .slice(0, max)
    .map((i) => {
      const path = [prefix, ...i.path.map(String)].filter((p) => p !== '').join('.');
      return escapeRankText(`${path || '(root)'}: ${i.message}`);
    })
    .join('; ');
  const more = error.issues.length - Math.min(max, error.issues.length);
  return more > 0 ? `${shown}; and ${more} more (${error.issues.length} issues)` : shown;
}
