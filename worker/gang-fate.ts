/**
 * The fate of one block attempt's gang: the first failure wins, kills every rank at once, and
 * every wait raced against it (`race`) rejects with it; a cancel notice either fails the attempt
 * (before the rep loop, or a gang across hosts, which stops as one) or wakes the rep loop, which
 * aborts the rep in flight and commits what it measured.
 */
import { OrchError } from '../jobs/errors.ts';
import type { GangContext } from './gang-context.ts';

/** The gang lost its lease (expired, released or revoked): never retried as the same attempt. */
export class LeaseLostError extends OrchError {
  constructor(message: string) {
    super('LEASE_LOST', message);
  }
}

export class GangFate {
  private failureNow: Error | null = null;
  private rejectFailed!: (e: Error) => void;
  private readonly failed: Promise<never>;
  /** the gang is ending (failed, measured, aborted): a rank's exit from here is no failure */
  closing = false;
  /** `orch cancel`: the notice's reason once it arrived; the rep loop commits what it measured */
  private cancelReasonNow: string | null = null;
  private wakeCancelled: () => void = () => undefined;
  /** resolves (null) when a cancel notice reached the rep loop */
  readonly cancelled = new Promise<null>((resolve) => (this.wakeCancelled = () => resolve(null)));
  /** the rep loop has begun: from here a cancel commits instead of failing the attempt */
  measuring = false;
  /** the ranks were killed to abort a cancelled rep: they are not closed gracefully */
  private abortedNow = false;

  constructor(
    private readonly gang: GangContext,
    /** a gang across hosts: a cancel fails it as a whole */
    private readonly spread: boolean,
    /** SIGKILLs every rank of this host's part, now */
    private readonly killRanks: () => void,
  ) {
    this.failed = new Promise<never>((_, reject) => (this.rejectFailed = reject));
    this.failed.catch(() => {});
  }

  get failure(): Error | null {
    return this.failureNow;
  }

  get cancelReason(): string | null {
    return this.cancelReasonNow;
  }

  get aborted(): boolean {
    return this.abortedNow;
  }

  /** First failure wins: every rank is killed at once, every raced await rejects with it. */
  fail(err: Error): void {
    if (this.failureNow) return;
    this.failureNow = err;
    this.closing = true;
    this.killRanks();
    this.gang.log.error({ err }, 'block attempt failed; ranks killed');
    this.rejectFailed(err);
  }

  race<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.failed]);
  }

  /**
   * The cancel notice. In the rep loop: abort the rep in flight and commit the measured ones,
   * the rest `cancelled`. Before it (ranks starting, gates) there is nothing to keep: the
   * attempt fails and the scheduler accounts its reps cancelled. A gang across hosts stops as one
   * (its parts' collectives meet): it fails too, and no part commits.
   */
  cancel(reason: string): void {
    if (this.failureNow || this.cancelReasonNow !== null) return;
    const j = this.gang.job;
    if (this.spread || !this.measuring) {
      const when = this.spread ? 'as a whole (a gang across hosts)' : 'before its first rep';
      this.fail(
        new LeaseLostError(`block ${j.block} attempt ${j.attempt} (epoch ${j.epoch}) cancelled ${when}: ${reason}`),
      );
      return;
    }
    this.cancelReasonNow = reason;
    this.gang.log.info({ reason }, 'cancelled: aborting the rep in flight, committing the measured reps');
    this.wakeCancelled();
  }

  /** Kills the ranks mid-rep without failing the gang: the aborted rep is simply not kept. */
  abortRanks(): void {
    this.closing = true;
    this.abortedNow = true;
    this.killRanks();
  }
}
