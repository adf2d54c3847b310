/**
 * An experiment that ended cancelled or failed, as its record says (state and reason): the
 * outcome its report and exit code give instead of a speed verdict. A failure is the user's input
 * (exit 2, as any input error) when the first error code its reason names is of that kind in the
 * registry (jobs/error-codes.ts): a build that failed before any card was leased
 * (orchestrator/scheduler/build-phase.ts buildFailureReason: "…: BUILD_FAILED: …"), a submission
 * the scheduler refused ("SUBMIT_UNAUTHORIZED: …").
 */
import { ERROR_CODES, isErrorCode } from '../../jobs/error-codes.ts';
import type { ExperimentRecord } from '../../store/experiment-store.ts';
import type { StoppedExperiment } from '../stats/types.ts';

export function stoppedExperiment(exp: Pick<ExperimentRecord, 'state' | 'reason'>): StoppedExperiment | null {
  if (exp.state !== 'cancelled' && exp.state !== 'failed') return null;
  const reason = exp.reason ?? exp.state;
  const code = [...reason.matchAll(/\b([A-Z][A-Z0-9_]+): /g)].map((m) => m[1]!).find(isErrorCode);
  return {
    state: exp.state,
    reason,
    user_input: exp.state === 'failed' && code !== undefined && ERROR_CODES[code].kind === 'user-input',
  };
}
