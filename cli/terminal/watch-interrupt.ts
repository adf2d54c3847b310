/**
 * Ctrl-C while `orch submit` or `orch watch` follows an experiment on a cluster. The experiment
 * runs on the cluster's scheduler and workers, not in this process, so stopping to watch does
 * not stop it: the user is told so, and how to follow it again or cancel it, and the command
 * exits 130 (the shell's 128 + SIGINT). With `--cancel-on-interrupt` it is cancelled instead
 * (orchestrator/experiment/cancel.ts: the running blocks keep the reps they measured). A second
 * Ctrl-C while that runs exits at once, by Node's default.
 */
import type { Redis } from 'ioredis';
import { cancelExperiment } from '../../orchestrator/experiment/cancel.ts';
import { SIGNAL_EXIT_CODES } from '../exit-codes.ts';

export class WatchInterrupt {
  readonly abort = new AbortController();
  /** the experiment followed, once known */
  experiment: string | null = null;

  constructor(private readonly cancelOnInterrupt: boolean) {
    process.once('SIGINT', this.onSignal);
  }

  /** The experiment followed, once it is known (a submit learns it after registering). */
  following(id: string): void {
    this.experiment = id;
  }

  get interrupted(): boolean {
    return this.abort.signal.aborted;
  }

  private readonly onSignal = (): void => {
    this.abort.abort();
  };

  /** After the wait returned because of the interrupt: says what happens to the experiment (and cancels it, if asked); the exit code. */
  async finish(redis: Redis, prefix: string, note: (line: string) => void): Promise<number> {
    const id = this.experiment;
    if (id === null) {
      note('interrupted before the experiment was registered: nothing was submitted');
      return SIGNAL_EXIT_CODES.SIGINT;
    }
    if (this.cancelOnInterrupt) {
      const r = await cancelExperiment(redis, prefix, id, 'cancelled on interrupt (--cancel-on-interrupt)');
      note(
        r.state === 'cancelling'
          ? `interrupted: cancelling experiment ${id}\n  its running blocks keep the reps they measured;\n  orch status shows when it has settled`
          : `interrupted: experiment ${id} had already ended (${r.state})`,
      );
      return SIGNAL_EXIT_CODES.SIGINT;
    }
    note(
      [
        `interrupted: stopped watching; experiment ${id}`,
        '  keeps running on the cluster.',
        `  follow it again:     orch watch ${id}`,
        `  results once ended:  orch report ${id}`,
        `  cancel it:           orch cancel ${id}`,
      ].join('\n'),
    );
    return SIGNAL_EXIT_CODES.SIGINT;
  }

  dispose(): void {
    process.off('SIGINT', this.onSignal);
  }
}
