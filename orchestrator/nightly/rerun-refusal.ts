/**
 * Whether an experiment record read back from Redis may be run again (a nightly confirmation
 * run, confirm-regressions.ts). Whoever can write to Redis can change a stored record after its
 * night ran, and a re-run is signed with serve's own submit token: run unchecked, a changed spec
 * would become a command that runs under a valid signature. So a record is run again only when
 * the submitter's signature made at first submit (jobs/submit-signature.ts) still verifies over
 * the whole record as it is now in Redis — id, hash, priority, spec text, parsed spec and plan —
 * and its hash is the one the night recorded when it submitted the spec from the suite's file.
 * Anything else is refused with the reason, which the caller turns into an alert, never a run.
 */
import { submissionRefusal } from '../../jobs/submit-signature.ts';
import { type ExperimentRecord, signedSubmission } from '../../store/experiment-store.ts';

/** The prefix of every refusal: the nightly's alerts and tests look for it. */
export const RECORD_CHANGED = 'stored record changed since the night ran';

/**
 * Why `exp` must not be run again, or null when it is the record the night submitted.
 * `nightHash`: the spec hash the night recorded for it (null when the night recorded none).
 */
export function rerunRefusal(exp: ExperimentRecord, nightHash: string | null, token: Buffer): string | null {
  const unsigned = submissionRefusal(signedSubmission(exp), exp.submitSignature, token);
  if (unsigned !== null) return `${RECORD_CHANGED}: experiment ${exp.id} in Redis: ${unsigned}; it was not run again`;
  if (nightHash !== null && exp.hash !== nightHash) {
    return `${RECORD_CHANGED}: experiment ${exp.id} in Redis has spec hash ${exp.hash.slice(0, 12)}…, the night recorded ${nightHash.slice(0, 12)}…; it was not run again`;
  }
  return null;
}
