/**
 * The exit code of an experiment's outcome, the same for `orch submit`, `orch report`, `orch
 * watch` and `orch nightly run`, so a CI step can branch on it:
 *
 *   0   faster        the primary change is beyond min_effect in the better direction
 *   0   pass          a capture probe whose self-checks all held
 *   3   inconclusive  no change beyond min_effect could be shown (see the report's bound)
 *   4   slower        a regression beyond min_effect
 *   5   invalid       a gate failed or the input cannot carry a verdict
 *   6   equivalent    a sequential experiment showed the change inside ±min_effect (its repeated CI)
 *   7   fail          a capture probe whose self-checks did not all hold
 *   8   failed        the experiment failed (2 instead when the failure is the user's input)
 *   9   cancelled     the experiment was cancelled: its partial data carries no verdict
 *  10   not_testable  a graph arm's capture failed in the user's program (a capture blocker, listed
 *                     first in the report): its comparisons are not testable; the other arms were
 *                     measured and compared
 *
 * `--fail-on` picks which of inconclusive, slower, invalid, equivalent, fail and not_testable exit with their
 * code (DEFAULT_FAIL_ON: slower, invalid, fail, not_testable); any other of them exits 0. faster and pass always
 * exit 0, failed and cancelled always exit their code. 1 (a bug) and 2 (a user input error,
 * jobs/errors.ts) keep their meaning across orch.
 */

import { isOneOf } from '../../jobs/one-of.ts';
import type { Analysis, Outcome } from '../stats/types.ts';

export const EXIT_CODES: Readonly<Record<Outcome, number>> = Object.freeze({
  faster: 0,
  pass: 0,
  inconclusive: 3,
  slower: 4,
  invalid: 5,
  equivalent: 6,
  fail: 7,
  failed: 8,
  cancelled: 9,
  not_testable: 10,
});

/** The outcomes `--fail-on` decides: each fails (its code) or passes (0) as the user says. */
export const FAIL_ON_CHOICES = ['slower', 'invalid', 'inconclusive', 'equivalent', 'fail', 'not_testable'] as const;
export type FailOn = (typeof FAIL_ON_CHOICES)[number];

/** A change that cannot be shown is not a failure: a pull request that changes nothing passes. */
export const DEFAULT_FAIL_ON: readonly FailOn[] = Object.freeze(['slower', 'invalid', 'fail', 'not_testable']);

export type FailOnSet = ReadonlySet<FailOn>;
export const DEFAULT_FAIL_ON_SET: FailOnSet = new Set(DEFAULT_FAIL_ON);

const decidable = (o: Outcome): o is FailOn => isOneOf(FAIL_ON_CHOICES, o);

/** Whether this outcome fails the step under `failOn`. */
export function outcomeFails(outcome: Outcome, failOn: FailOnSet = DEFAULT_FAIL_ON_SET): boolean {
  if (decidable(outcome)) return failOn.has(outcome);
  return EXIT_CODES[outcome] !== 0;
}

/** The exit code of an analysed experiment under `failOn`. */
export function outcomeExitCode(
  a: Pick<Analysis, 'verdict' | 'stopped'>,
  failOn: FailOnSet = DEFAULT_FAIL_ON_SET,
): number {
  if (a.verdict === 'failed' && a.stopped?.user_input) return 2;
  return outcomeFails(a.verdict, failOn) ? EXIT_CODES[a.verdict] : 0;
}

/**
 * Most severe first: several outcomes (a night's experiments) exit with the first of these that
 * fails under `failOn`, 0 when none does.
 */
const SEVERITY: readonly Outcome[] = [
  'failed',
  'cancelled',
  'invalid',
  'not_testable',
  'fail',
  'slower',
  'inconclusive',
  'equivalent',
  'faster',
  'pass',
];

export function worstExitCode(
  outcomes: readonly Pick<Analysis, 'verdict' | 'stopped'>[],
  failOn: FailOnSet = DEFAULT_FAIL_ON_SET,
): number {
  for (const o of SEVERITY) {
    const hit = outcomes.find((x) => x.verdict === o && outcomeExitCode(x, failOn) !== 0);
    if (hit) return outcomeExitCode(hit, failOn);
  }
  return 0;
}
