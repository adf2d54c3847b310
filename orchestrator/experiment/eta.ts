/**
 * How long an experiment still has to run, from what it measured: the wall time of its reps
 * (the gap between one rep noted measured and the next of the same attempt, on its worker's
 * clock, so the worker's turnaround and the one-deep pipeline are in it) times the reps not yet
 * done. Before its first two reps of an attempt answered, the workload's step history
 * (store/step-history.ts: ms per step of past reps) stands in; with neither, the ETA is unknown
 * and says so, rather than a guess: a fixed per-step guess said "~0 s" for blocks with minutes left.
 */

/**
 * The wall time of each rep, from the live count of one block attempt's measured reps
 * (store/rep-progress.ts) as it is seen to grow: the reps counted between two looks share the
 * time between their notes evenly, so a look that comes late loses no rep.
 */
export class RepClock {
  private readonly last = new Map<string, { done: number; at: number }>();
  private readonly durations: number[] = [];

  /** `block`/`attempt` had measured `done` reps, the last noted at `at` (ms, its worker's clock). */
  observe(block: number, attempt: number, done: number, at: number): void {
    const k = `${block}/${attempt}`;
    const before = this.last.get(k);
    if (before !== undefined && (done <= before.done || at < before.at)) return;
    this.last.set(k, { done, at });
    if (before === undefined) return;
    const n = done - before.done;
    for (let i = 0; i < n; i++) this.durations.push((at - before.at) / n);
  }

  /** The measured rep wall times so far, oldest first. */
  measured(): readonly number[] {
    return this.durations;
  }
}

/** How many of the latest rep times the estimate averages: drift and warm-up leave the older ones behind. */
export const ETA_WINDOW = 20;

export interface Eta {
  /** ms left */
  ms: number;
  /** what it rests on: this experiment's reps, or past reps of its workload */
  basis: 'measured' | 'history';
  /** reps it rests on */
  reps: number;
}

export interface EtaInput {
  /** reps still to run, summed over every block not ended */
  repsLeft: number;
  /** blocks that run at once now (at least one is assumed: the queue grants the next) */
  parallel: number;
  /** measured rep wall times of this experiment (RepClock) */
  repMs: readonly number[];
  /** the workload's step history, as ms per rep (ms per step × steps per rep), or null */
  historyRepMs: { ms: number; reps: number } | null;
}

/** The time left, or null when nothing was measured yet to base it on. */
export function estimateRemaining(input: EtaInput): Eta | null {
  const parallel = Math.max(1, input.parallel);
  if (input.repsLeft <= 0) return { ms: 0, basis: 'measured', reps: input.repMs.length };
  const recent = input.repMs.slice(-ETA_WINDOW);
  if (recent.length > 0) {
    const mean = recent.reduce((a, b) => a + b, 0) / recent.length;
    return { ms: (mean * input.repsLeft) / parallel, basis: 'measured', reps: input.repMs.length };
  }
  if (input.historyRepMs)
    return { ms: (input.historyRepMs.ms * input.repsLeft) / parallel, basis: 'history', reps: input.historyRepMs.reps };
  return null;
}

/** `1 h 02 min`, `3 min 05 s`, `42 s`. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}

/** `ETA ~3 min 05 s (from 14 reps)`, `ETA ~40 s (from the workload's history, 900 reps)`, `ETA unknown (no rep yet)`. */
export function formatEta(eta: Eta | null): string {
  if (eta === null) return 'ETA unknown (no rep yet)';
  const from =
    eta.basis === 'measured'
      ? `from ${eta.reps} rep${eta.reps === 1 ? '' : 's'}`
      : `from the workload's history, ${eta.reps} reps`;
  return `ETA ~${formatDuration(eta.ms)} (${from})`;
}
