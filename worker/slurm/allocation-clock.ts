/**
 * The end of a worker's Slurm allocation, kept current, and the worker's stop before it.
 *
 * The worker must hold no lease past the allocation's end: its cards carry `until` (the end less
 * the drain margin) and the scheduler grants no block expected to end later (grant-planner.ts);
 * at `until` the worker stops gracefully (the rep in flight finishes, the rest of a block is
 * recorded not run, the leases go, the heartbeat goes) before Slurm's SIGTERM, which reaches
 * every process of the step, the ranks too. The end moves when someone changes the job's time
 * limit (`scontrol update TimeLimit=`), so it is read again every `refreshMs`.
 *
 * A stop file (`orch slurm down`, or the batch script's trap of the pre-timeout `--signal`)
 * stops the worker the same way: a Slurm signal would reach the ranks as well.
 */
import { existsSync } from 'node:fs';

export interface AllocationClockOptions {
  /** the allocation's end as first read (ms since the epoch), null when unlimited */
  end: number | null;
  /** how long before the end the worker stops taking work */
  drainMs: number;
  readEnd: () => Promise<number | null>;
  /** how often the end is read again (default 30 s) */
  refreshMs?: number;
  stopFile?: string;
  /** how often the stop file is looked for (default 1 s) */
  pollMs?: number;
  /** the end moved: `until` is the new last moment to hold a lease */
  onUntil: (until: number | undefined) => void;
  onStop: (why: string) => void;
}

export class AllocationClock {
  private end: number | null;
  private timers: NodeJS.Timeout[] = [];
  private stopAt: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly opts: AllocationClockOptions) {
    this.end = opts.end;
  }

  /** The last moment a lease may be held, or undefined when the allocation has no end. */
  until(): number | undefined {
    return this.end === null ? undefined : this.end - this.opts.drainMs;
  }

  start(): void {
    this.schedule();
    this.timers.push(setInterval(() => void this.refresh(), this.opts.refreshMs ?? 30_000));
    const file = this.opts.stopFile;
    if (file !== undefined) {
      this.timers.push(
        setInterval(
          () =>
            existsSync(file) &&
            this.stop(`stop file ${file} appeared (orch slurm down, or the job's pre-timeout signal)`),
          this.opts.pollMs ?? 1000,
        ),
      );
    }
  }

  close(): void {
    for (const t of this.timers) clearInterval(t);
    clearTimeout(this.stopAt);
  }

  private async refresh(): Promise<void> {
    const end = await this.opts.readEnd().catch(() => this.end);
    if (end === this.end || this.stopped) return;
    this.end = end;
    this.opts.onUntil(this.until());
    this.schedule();
  }

  private schedule(): void {
    clearTimeout(this.stopAt);
    const until = this.until();
    if (until === undefined) return;
    // setTimeout's delay is a 32-bit count of ms: a later end is looked at again by refresh
    const delay = Math.min(Math.max(0, until - Date.now()), 2 ** 31 - 1);
    this.stopAt = setTimeout(
      () =>
        this.stop(
          `the Slurm allocation ends at ${new Date(this.end ?? 0).toISOString()}; stopping ${this.opts.drainMs} ms before it`,
        ),
      delay,
    );
  }

  private stop(why: string): void {
    if (this.stopped) return;
    this.stopped = true;
    this.close();
    // the cards end now: the scheduler grants nothing more here while the worker drains
    this.end = Date.now() + this.opts.drainMs;
    this.opts.onUntil(this.until());
    this.opts.onStop(why);
  }
}
