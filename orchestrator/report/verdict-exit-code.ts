/**
 * Exit codes of `orch report` for CI pipelines, one per verdict of the experiment:
 *
 *   0   faster        the primary change is beyond min_effect in the better direction
 *   3   inconclusive  no change beyond min_effect could be shown (see the report's bound)
 *   4   slower        a regression beyond min_effect
 *   5   invalid       a gate failed or the input cannot carry a verdict
 *   6   equivalent    a sequential experiment showed the change inside ±min_effect (its repeated CI)
 *
 * 1 (a bug) and 2 (a user input error, jobs/errors.ts) keep their meaning across orch.
 */
import type { Analysis, Verdict } from '../stats/types.ts';

export const EXIT_CODES: Readonly<Record<Verdict, number>> = Object.freeze({
  faster: 0,
  inconclusive: 3,
  slower: 4,
  invalid: 5,
  equivalent: 6,
});

export function verdictExitCode(analysis: Pick<Analysis, 'verdict'>): number {
  return EXIT_CODES[analysis.verdict];
}
