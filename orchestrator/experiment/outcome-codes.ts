/**
 * The fixed set of outcomes an ended experiment is listed under (experiment-outcome.ts): the
 * analysis' verdict of a done one, else cancelled, failed, or no-reps (done with no rep
 * committed). A label of /metrics and a filter of the lists, so it never grows by itself.
 * Imports nothing at run time: `orch status --help` lists it.
 */
import type { Verdict } from '../stats/types.ts';

/** Every verdict, checked against the type: a verdict added there must be added here. */
const VERDICTS = { faster: 1, slower: 1, equivalent: 1, inconclusive: 1, invalid: 1 } as const satisfies Record<Verdict, 1>;

export const VERDICT_CODES = Object.keys(VERDICTS) as [Verdict, ...Verdict[]];
export const OUTCOMES = [...VERDICT_CODES, 'cancelled', 'failed', 'no-reps'] as const;
export type Outcome = (typeof OUTCOMES)[number];
