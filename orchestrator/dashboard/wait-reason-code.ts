/**
 * A waiting block's reason as a fixed code, for /metrics' `orch_blocks_waiting{reason}`: the
 * scheduler's `why` (grant-planner.ts, build-phase.ts) is a sentence with experiment ids, card
 * counts and a moving ETA in it, which as a label value would make a new series for every
 * experiment and every second. The sentence stays on the pages and in `orch status`.
 */
export const WAIT_REASONS = [
  /** no host, or no card of the backend, is registered */
  'no-cards',
  /** the gang can never be formed from the registered cards (too many ranks, mixed versions) */
  'never-fits',
  /** its builds are not ready on enough hosts */
  'builds',
  /** free cards would fit it, but starting it would delay an older block (FIFO) */
  'behind-older',
  /** not enough free cards: they are held */
  'cards-busy',
  /** no reason stored yet: no grant pass has looked at it (no scheduler running, or just submitted), or it has waited under a second (scheduler/grant-apply.ts WHY_FIRST_MS) */
  'not-planned',
  /** auto-sized blocks: the first block's measured start-up sizes the others (scheduler/auto-block-sizing.ts) */
  'sizing',
  /** a sentence this list does not know */
  'other',
] as const;
export type WaitReason = (typeof WAIT_REASONS)[number];

/** First match wins: the patterns are the starts of the scheduler's sentences. */
const PATTERNS: [RegExp, WaitReason][] = [
  [/^no host is registered|^no \S* ?card is registered/, 'no-cards'],
  [/^needs \d+ /, 'never-fits'],
  [/^waiting for its builds/, 'builds'],
  [/^behind .*\(FIFO/, 'behind-older'],
  [/^waiting for \d+ free card/, 'cards-busy'],
  [/^queued \(no grant pass yet/, 'not-planned'],
  [/^waiting for block 0 to commit/, 'sizing'],
];

export function waitReasonCode(why: string | null): WaitReason {
  if (why === null) return 'not-planned';
  return PATTERNS.find(([re]) => re.test(why))?.[1] ?? 'other';
}
