/**
 * Identical reasons said once: a block whose start failed leaves the same reason on each of its
 * planned reps, and a report, a terminal or a CI log that repeats it per rep buries everything
 * else (and grows with the plan: 100 reps × 1 MiB of a rank's error). Every output that lists why
 * reps were not measured groups them here: "100 reps failed (0/base/0, 0/base/1, … 97 more): <reason>",
 * the reason escaped and bounded as rank text (jobs/rank-text.ts).
 */
import { escapeRankText } from './rank-text.ts';

/** How many rep keys a grouped line names before it counts the rest. */
export const KEYS_NAMED = 3;

export interface KeyedReason {
  /** "<block>/<arm>/<rep>" */
  key: string;
  reason: string;
}

/** One line per distinct reason, in order of first appearance: `rep K <verb>: R` or `N reps <verb> (K1, K2, K3, … M more): R`. */
export function groupedReasonLines(items: KeyedReason[], opts: { noun?: string; verb?: string } = {}): string[] {
  const noun = opts.noun ?? 'rep';
  const verb = opts.verb ?? 'failed';
  const groups = new Map<string, string[]>();
  for (const it of items) {
    const keys = groups.get(it.reason);
    if (keys) keys.push(it.key);
    else groups.set(it.reason, [it.key]);
  }
  return [...groups].map(([reason, keys]) => {
    const text = escapeRankText(reason);
    if (keys.length === 1) return `${noun} ${keys[0]} ${verb}: ${text}`;
    const named = keys.slice(0, KEYS_NAMED).join(', ');
    const more = keys.length > KEYS_NAMED ? `, … ${keys.length - KEYS_NAMED} more` : '';
    return `${keys.length} ${noun}s ${verb} (${named}${more}): ${text}`;
  });
}

/**
 * An experiment's reason from its failed blocks: "blocks 0, 1, 2: R; block 3: S", each distinct
 * reason once and bounded (a failure of every block's start would otherwise repeat it per block).
 */
export function groupedBlockReasons(blocks: { block: number; reason: string | null }[]): string {
  const groups = new Map<string, number[]>();
  for (const b of blocks) {
    const r = b.reason ?? 'no reason recorded';
    const g = groups.get(r);
    if (g) g.push(b.block);
    else groups.set(r, [b.block]);
  }
  return [...groups]
    .map(([reason, bs]) => `${bs.length === 1 ? 'block' : 'blocks'} ${bs.join(', ')}: ${escapeRankText(reason)}`)
    .join('; ');
}
