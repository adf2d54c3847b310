/**
 * The live count of a block attempt's measured reps (store/rep-progress.ts), noted by the gang's
 * leading worker (rank 0's host) as each rep is measured, for `orch watch` and `orch status`: the
 * event stream's copy of a rep line may be cut or dropped, this count is not. Notes go out in
 * order off the measurement path; `flush()` awaits them before the block commits. A failed note
 * is logged, never fails the block: the committed reps are the record.
 */
import type { RepProgress } from '../store/rep-progress.ts';
import type { CommitRep } from '../store/result-store.ts';
import type { GangContext } from './gang-context.ts';

export class LiveProgress {
  private pending: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: RepProgress,
    private readonly gang: GangContext,
  ) {}

  /** One rep measured in the planned run (a re-run repeats a rep already counted). */
  rep(r: CommitRep): void {
    // a spread gang's other parts measure the same reps: the part of rank 0 counts them
    if (this.gang.rankOf(0) !== 0) return;
    const { job, log } = this.gang;
    const steps = [...r.result.step_ms].sort((a, b) => a - b);
    const latest = {
      arm: r.arm,
      mode: r.result.mode,
      backend: r.result.backend,
      median_ms: steps[steps.length >> 1] ?? null,
      steps: steps.length,
      at: Date.now(),
    };
    this.pending = this.pending
      .then(() => this.store.note(job.experiment, job.block, job.attempt, latest))
      .then(
        () => undefined,
        (err: unknown) => log.warn({ err }, "rep not counted in the experiment's live progress"),
      );
  }

  flush(): Promise<void> {
    return this.pending;
  }
}
