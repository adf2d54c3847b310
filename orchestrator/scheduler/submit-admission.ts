/**
 * The scheduler's acceptance of a registered experiment: it plans, builds and grants nothing for
 * one whose record does not carry the submitter's signature under the submit token
 * (jobs/submit-signature.ts). Anyone who can write to Redis can register a record; only a
 * holder of the token can make one the scheduler acts on. A refused experiment ends failed with
 * SUBMIT_UNAUTHORIZED before any build or card (grant-loop.ts, experiment-settling.ts).
 *
 * Each record read is checked once: the check is per object, so a record read again (a new
 * term, the build phase's own read, settling) is checked again as it now is in Redis.
 */
import { submissionRefusal } from '../../jobs/submit-signature.ts';
import { type ExperimentRecord, signedSubmission } from '../../store/experiment-store.ts';

export class SubmitAdmission {
  private readonly checked = new WeakMap<ExperimentRecord, string | null>();

  constructor(private readonly token: Buffer) {}

  /** Why the scheduler refuses `exp` (the experiment's failure reason), or null when it is signed. */
  refusal(exp: ExperimentRecord): string | null {
    let r = this.checked.get(exp);
    if (r === undefined) {
      const why = submissionRefusal(signedSubmission(exp), exp.submitSignature, this.token);
      r =
        why === null
          ? null
          : `SUBMIT_UNAUTHORIZED: the scheduler refused experiment ${exp.id}: ${why}; nothing was planned, built or granted. Submit it with orch submit and the submit token orch serve holds (ORCH_SUBMIT_TOKEN_FILE)`;
      this.checked.set(exp, r);
    }
    return r;
  }
}
