/**
 * The exit code of one night (`orch nightly run`): each row's outcome — its experiment's end when
 * that was cancelled or failed (or never ran), a failed gate as invalid, else its verdict — and
 * the most severe of them that fails under --fail-on (orchestrator/report/outcome-exit-code.ts),
 * so a night with a regression exits as `orch submit` of that experiment would.
 */
import type { NightlyRow } from '../../history/history-store.ts';
import { EXIT_CODES, type FailOnSet, worstExitCode } from '../report/outcome-exit-code.ts';
import type { Analysis, Outcome } from '../stats/types.ts';

function rowOutcome(
  r: Pick<NightlyRow, 'experiment_state' | 'verdict' | 'gates_pass' | 'error'>,
): Pick<Analysis, 'verdict' | 'stopped'> {
  if (r.experiment_state === 'cancelled')
    return { verdict: 'cancelled', stopped: { state: 'cancelled', reason: r.error ?? 'cancelled', user_input: false } };
  // a spec not submitted (not-run) failed the night as surely as an experiment that failed
  if (r.experiment_state !== 'done')
    return {
      verdict: 'failed',
      stopped: { state: 'failed', reason: r.error ?? r.experiment_state, user_input: false },
    };
  if (r.gates_pass === false) return { verdict: 'invalid' };
  return { verdict: r.verdict !== null && Object.hasOwn(EXIT_CODES, r.verdict) ? (r.verdict as Outcome) : 'invalid' };
}

export function nightExitCode(
  rows: readonly Pick<NightlyRow, 'experiment_state' | 'verdict' | 'gates_pass' | 'error'>[],
  failOn: FailOnSet,
): number {
  return worstExitCode(rows.map(rowOutcome), failOn);
}
