/**
 * How an embedded run ends before its experiment does. The first SIGINT or SIGTERM asks for a
 * graceful end: `abort` fires, and the run cancels the experiment, writes what was measured and
 * shuts down. A second signal (the user means it), or the private redis-server exiting under the
 * run, ends it now: every wait passed through `guard` rejects at once — with EndedBySignal, or
 * with EMBEDDED_REDIS_DIED — instead of waiting on a Redis that will never answer again
 * (ioredis retries a dead server forever).
 */
import { OrchError } from '../../jobs/errors.ts';
import type { RedisServerProcess } from '../../store/redis-server-process.ts';

/** The run was ended by a second signal: exit now, skipping the graceful part. */
export class EndedBySignal extends Error {
  constructor(readonly signal: NodeJS.Signals) {
    super(`ended by a second ${signal}`);
  }
}

export class RunInterrupts {
  /** the first signal, once one came */
  interrupted: NodeJS.Signals | null = null;
  readonly abort = new AbortController();
  private endNow: (err: Error) => void = () => {};
  private readonly ended: Promise<never>;
  /** why the run ends now, once it does */
  endedBy: Error | null = null;

  constructor(
    private readonly note: (line: string) => void,
    private readonly what: () => string,
  ) {
    this.ended = new Promise<never>((_, reject) => (this.endNow = reject));
    this.ended.catch(() => undefined);
    process.on('SIGINT', this.onSignal);
    process.on('SIGTERM', this.onSignal);
  }

  private readonly onSignal = (sig: NodeJS.Signals): void => {
    if (this.interrupted === null) {
      this.interrupted = sig;
      this.note(`${sig}: cancelling ${this.what()} and shutting down (${sig} again: exit at once)`);
      this.abort.abort();
      return;
    }
    this.note(`${sig} again: exiting now`);
    this.end(new EndedBySignal(sig));
  };

  private end(err: Error): void {
    if (this.endedBy) return;
    this.endedBy = err;
    this.abort.abort();
    this.endNow(err);
  }

  /** The private Redis exiting while `stopping()` is false ends the run with EMBEDDED_REDIS_DIED. */
  watch(server: RedisServerProcess, stopping: () => boolean): void {
    server.child.once('exit', (code, signal) => {
      if (stopping()) return;
      this.end(
        new OrchError(
          'EMBEDDED_REDIS_DIED',
          `the private redis-server (pid ${server.child.pid}) exited (${signal ?? `exit code ${code}`}) while ${this.what()} ran: its plan, leases and results were in it, so the run cannot go on`,
          {
            hint: 'something outside orch ended it (a kill, the OOM killer: see `dmesg`); submit the spec again',
          },
        ),
      );
    });
  }

  /** `p`, unless the run ends now first. */
  guard<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.ended]);
  }

  dispose(): void {
    process.off('SIGINT', this.onSignal);
    process.off('SIGTERM', this.onSignal);
  }
}
