/**
 * The fixed set of outcomes an ended experiment is listed under (experiment-outcome.ts): the
 * analysis' outcome of a done one (a speed verdict, or a probe's pass or fail), else cancelled,
 * failed, or no-reps (done with no rep committed). A label of /metrics and a filter of the lists, so it never grows by itself.
 * Imports nothing at run time: `orch status --help` lists it.
 */
import type { Outcome as AnalysisOutcome, Verdict } from '../stats/types.ts';

/** Every verdict, checked against the type: a verdict added there must be added here. */
const VERDICTS = {
  faster: 1,
  slower: 1,
  equivalent: 1,
  inconclusive: 1,
  invalid: 1,
  not_testable: 1,
} as const satisfies Record<Verdict, 1>;

export const VERDICT_CODES = Object.keys(VERDICTS) as [Verdict, ...Verdict[]];
/** Every outcome of the analysis, checked against its type the same way. */
const ANALYSIS_OUTCOMES = { ...VERDICTS, pass: 1, fail: 1, cancelled: 1, failed: 1 } as const satisfies Record<
  AnalysisOutcome,
  1
>;

export const OUTCOMES = [...(Object.keys(ANALYSIS_OUTCOMES) as AnalysisOutcome[]), 'no-reps'] as const;
/** Whether an analysis' outcome is a speed verdict (a probe's pass or fail is not). */
export function isVerdict(o: AnalysisOutcome): o is Verdict {
  return o in VERDICTS;
}
export type Outcome = (typeof OUTCOMES)[number];
