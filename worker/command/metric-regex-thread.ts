/**
 * A command rank's metric regex, run on a worker_thread with a time budget per output line.
 *
 * The regex is the user's: the static check at validate (jobs/regex-backtracking.ts) refuses
 * nested quantifiers, but overlapping alternatives such as `(a|a)*$` still backtrack for minutes
 * on a 30-character line. On the worker's event loop that would stop the lease renewals, the
 * heartbeat and every other rank's reading; here it only occupies this thread. A line whose
 * match takes longer than the budget gets the thread terminated (V8 interrupts a running regex)
 * and the rank failed with METRIC_REGEX_TOO_SLOW naming the pattern and the budget.
 *
 * Lines are matched in output order; every line sent while others are outstanding goes in one
 * message, and the budget clock restarts at each answer, so it bounds each line, not the batch.
 */
import { Worker } from 'node:worker_threads';
import { UserInputError } from '../../jobs/errors.ts';

/** The named groups of a match, or null for a line the regex does not match. */
export type RegexGroups = Record<string, string | undefined> | null;

/** Default per-line budget: far above any sane metric regex, far below a lease TTL. */
export const METRIC_REGEX_BUDGET_MS = 1000;

// Plain JavaScript, evaluated in the thread: no loader (tsx) and no file to resolve in dist/.
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const re = new RegExp(workerData.pattern);
parentPort.on('message', (lines) => {
  for (const line of lines) {
    const m = re.exec(line);
    parentPort.postMessage(m ? { ...(m.groups || {}) } : null);
  }
});
`;

interface Pending {
  line: string;
  lineNo: number;
  resolve: (g: RegexGroups) => void;
  reject: (err: Error) => void;
}

export class MetricRegexThread {
  private readonly thread: Worker;
  private isOnline = false;
  /** sent, not answered yet, in order */
  private readonly inFlight: Pending[] = [];
  /** not sent yet (the thread was still starting or busy with the previous batch) */
  private queued: Pending[] = [];
  private timer: NodeJS.Timeout | null = null;
  private failure: Error | null = null;
  private lineNo = 0;
  private closed = false;

  constructor(
    private readonly pattern: string,
    private readonly budgetMs = METRIC_REGEX_BUDGET_MS,
  ) {
    this.thread = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData: { pattern },
      execArgv: [],
      stdout: true,
      stderr: true,
    });
    this.thread.unref();
    this.thread.once('online', () => {
      this.isOnline = true;
      this.send();
    });
    this.thread.on('message', (groups: RegexGroups) => {
      const p = this.inFlight.shift();
      if (!p) return;
      p.resolve(groups);
      this.arm();
      if (this.inFlight.length === 0) this.send();
    });
    this.thread.on('error', (err) => this.fail(new Error(`the metric regex thread failed: ${err.message}`)));
    this.thread.on('exit', () => {
      if (!this.closed) this.fail(new Error('the metric regex thread exited'));
    });
  }

  /** The named groups of `line`'s match (null: no match); rejects past the budget. */
  match(line: string): Promise<RegexGroups> {
    this.lineNo += 1;
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.queued.push({ line, lineNo: this.lineNo, resolve, reject });
      if (this.inFlight.length === 0) this.send();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.thread.terminate();
  }

  private send(): void {
    if (this.failure || this.closed || this.queued.length === 0 || this.inFlight.length > 0) return;
    // before 'online' the thread cannot answer: its start-up is not charged to the first line
    if (!this.isOnline) return;
    const batch = this.queued;
    this.queued = [];
    this.inFlight.push(...batch);
    this.thread.postMessage(batch.map((p) => p.line));
    this.arm();
  }

  /** (Re)starts the budget clock for the oldest line in flight, or stops it when none is. */
  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const oldest = this.inFlight[0];
    if (!oldest) return;
    this.timer = setTimeout(() => {
      this.fail(
        new UserInputError(
          'METRIC_REGEX_TOO_SLOW',
          `workload.metric_source.pattern ${JSON.stringify(this.pattern)} took longer than its budget of ${this.budgetMs} ms on output line ${oldest.lineNo} (catastrophic backtracking); the rank was killed; the line starts: ${clip(oldest.line)}`,
          {
            hint: 'make the pattern unambiguous: no alternatives that match the same text inside a repetition, e.g. (a|b)* rather than (a|a)*, and anchor it to the text around the number',
          },
        ),
      );
      void this.thread.terminate();
    }, this.budgetMs);
  }

  private fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    if (this.timer) clearTimeout(this.timer);
    for (const p of [...this.inFlight, ...this.queued]) p.reject(err);
    this.inFlight.length = 0;
    this.queued = [];
  }
}

function clip(s: string, n = 120): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}
