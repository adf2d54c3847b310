/**
 * An experiment's analysis as the cases a CI system shows (render-junit.ts, render-github.ts):
 * one per gate, one per comparison and one for the outcome, each passed, failed, skipped or in
 * error under the caller's --fail-on (outcome-exit-code.ts). A gate that failed fails when
 * --fail-on has invalid; a comparison fails when --fail-on has its verdict. An experiment that
 * ended early measured nothing a CI may act on: its comparisons are skipped and its outcome
 * case is an error with the reason. The A/A comparison is its gate's case, not one of its own.
 */
import { pValue, signedPct } from '../stats/format-number.ts';
import type { Analysis, Comparison, Outcome } from '../stats/types.ts';
import { allComparisons } from './all-comparisons.ts';
import { type FailOnSet, outcomeExitCode, outcomeFails } from './outcome-exit-code.ts';

export type CiStatus = 'passed' | 'failed' | 'skipped' | 'error';

export interface CiCase {
  /** the group it belongs to: gates, comparisons or outcome */
  group: 'gates' | 'comparisons' | 'outcome';
  name: string;
  status: CiStatus;
  /** worth a reader's look even when it passed: a gate that failed, a change not shown good, partial data */
  notable: boolean;
  /** one line: what was found (a comparison's change, CI and p) */
  message: string;
  /** the longer text: a comparison's statement and reasons, a gate's detail */
  detail: string;
}

/**
 * `+5.02 % (CI +4.10 % to +5.93 %, p 0.0001)`: the change, its CI and p of a comparison; a
 * sequential primary comparison's `−5.01 % (repeated CI −5.97 % to −4.04 %, look 1, 8 pairs)`:
 * the numbers it was decided on, with no p (analyze.ts sequentialVerdict).
 */
export function changeWithCi(c: Comparison): string {
  if (c.sequential_look !== undefined) {
    const rci =
      c.relative.ci === null
        ? 'no repeated CI'
        : `repeated CI ${signedPct(c.relative.ci[0])} to ${signedPct(c.relative.ci[1])}`;
    const at = c.sequential_look === 0 ? 'no look yet' : `look ${c.sequential_look}, ${c.pairs} pairs`;
    return `${signedPct(c.relative.estimate)} (${rci}, ${at})`;
  }
  const ci = c.relative.ci === null ? 'no CI' : `CI ${signedPct(c.relative.ci[0])} to ${signedPct(c.relative.ci[1])}`;
  return `${signedPct(c.relative.estimate)} (${ci}, p ${pValue(c.log_ratio.p)})`;
}

/** outcomes that need no second look */
const GOOD: ReadonlySet<Outcome> = new Set(['faster', 'equivalent', 'pass']);

export function ciCases(a: Analysis, failOn: FailOnSet): CiCase[] {
  const gates = a.gates.map(
    (g): CiCase => ({
      group: 'gates',
      name: `gate ${g.name}`,
      status: g.pass === null ? 'skipped' : g.pass || !failOn.has('invalid') ? 'passed' : 'failed',
      notable: g.pass === false,
      message: `${g.name} gate: ${g.pass === null ? 'n/a' : g.pass ? 'pass' : 'FAIL'}`,
      detail: g.message,
    }),
  );
  const comparisons = allComparisons(a)
    .filter((c) => c !== a.aa)
    .map(
      (c): CiCase => ({
        group: 'comparisons',
        name: `${c.arm} vs ${c.reference}`,
        status: a.stopped ? 'skipped' : outcomeFails(c.verdict, failOn) ? 'failed' : 'passed',
        notable: !!a.stopped || !GOOD.has(c.verdict),
        message: `${a.stopped ? `partial data (experiment ${a.stopped.state}), no verdict` : c.verdict}: change ${changeWithCi(c)}`,
        detail: [c.statement, ...c.reasons].join('\n'),
      }),
    );
  const code = outcomeExitCode(a, failOn);
  const outcome: CiCase = {
    group: 'outcome',
    name: `outcome of ${a.experiment}`,
    status: a.stopped ? 'error' : code === 0 ? 'passed' : 'failed',
    notable: !GOOD.has(a.verdict),
    message: `${a.verdict}: exit code ${code}${a.primary && !a.stopped ? `; ${a.primary.arm} vs ${a.primary.reference} ${changeWithCi(a.primary)}` : ''}`,
    detail: [a.stopped?.reason, ...a.invalid_reasons, a.primary?.statement].filter((x): x is string => !!x).join('\n'),
  };
  return [...gates, ...comparisons, outcome];
}
