/**
 * The report's "Launches" section, folded from the committed reps (jobs/rep-result.ts: rank 0's
 * answer of each, never the event stream's copy): per arm, how many kernel
 * launches, graph launches, copies, memsets and synchronising calls one measured step made, and
 * who counted them — graphrt's own launch counter (`launches_per_step`, `dispatches_per_step`,
 * `nodes`), or orch's CUPTI injection library in a user's program (a command rep's `launches`:
 * per step through a rank library, ranklib/PROTOCOL.md, of the rep's warm-up steps where the library
 * paused for its timed steps (WARMUP_SOURCE); per NVTX step range, or else per rep ÷
 * steps, for a per_rep program, jobs/per-rep-counts.ts), or nobody, and why ("not available: ..."), never a zero standing in for it.
 * The numbers are medians over the arm's reps of each rep's per-step median (rank 0's lines: the
 * ranks of a gang run the same launches).
 */
import type { RepLine } from '../../jobs/stream-event.ts';
import { median } from './descriptive.ts';

export interface LaunchRow {
  arm: string;
  /** `graphrt`, `cupti`, perRangeSource(range), PER_REP_SOURCE, or `none: <why>` */
  source: string;
  modes: string[];
  reps: number;
  kernels_per_step: number | null;
  graphs_per_step: number | null;
  memcpy_per_step: number | null;
  memset_per_step: number | null;
  syncs_per_step: number | null;
  /** graph nodes (graphrt) or kernel launches made while capturing (cupti), over the arm's reps */
  captured: number | null;
}

interface ArmAcc {
  source: Set<string>;
  modes: Set<string>;
  reps: number;
  kernels: number[];
  graphs: number[];
  memcpy: number[];
  memset: number[];
  syncs: number[];
  captured: number[];
}

/** How a per_rep program's counts were made per step: said in the report, never passed off as a step's own. */
export const PER_REP_SOURCE =
  "cupti, per rep ÷ steps (a per_rep program: its process's counts, setup and warm-up included, over the steps it reported)";

/**
 * A rank library's counts of a rep's warm-up steps (`counted: "warmup"`): the same steps as its
 * timed ones, counted while the timed steps ran with the injection library paused. Said in the
 * report, so nobody reads them as the timed steps' own.
 */
export const WARMUP_SOURCE =
  'cupti, per warm-up step (the same steps as the timed ones, counted before them; the library was paused while the timed steps ran)';

/** How a per_rep program's counts were delimited by the NVTX range the spec named (its steps' own counts). */
export const perRangeSource = (range: string): string =>
  `cupti, per NVTX range ${JSON.stringify(range)} (a per_rep program's steps as its NVTX ranges delimit them, warm-up ranges dropped)`;

const acc = (): ArmAcc => ({
  source: new Set(),
  modes: new Set(),
  reps: 0,
  kernels: [],
  graphs: [],
  memcpy: [],
  memset: [],
  syncs: [],
  captured: [],
});
const mid = (xs: number[]): number | null => (xs.length === 0 ? null : median(xs));

export class LaunchSummaryFold {
  private readonly arms = new Map<string, ArmAcc>();

  /** `l`: rank 0's answer of one committed rep */
  add(l: RepLine): void {
    let a = this.arms.get(l.arm);
    if (!a) {
      a = acc();
      this.arms.set(l.arm, a);
    }
    a.reps++;
    a.modes.add(l.mode);
    if (l.backend !== 'command') {
      a.source.add('graphrt');
      // a graph replay is one dispatch holding the launches; eager, each launch is one
      if (l.mode === 'graph') {
        a.graphs.push(l.dispatches_per_step);
        if (l.nodes !== null) a.captured.push(l.nodes);
      } else a.kernels.push(l.launches_per_step);
      return;
    }
    const c = l.launches;
    if (c === undefined) {
      a.source.add('none: the rank reported no counts (a per-rep command, or a rank library without them)');
      return;
    }
    if (c.source === 'none') {
      a.source.add(`none: ${c.reason}`);
      return;
    }
    if (c.source === 'cupti-rep') {
      // a per_rep program: the whole rep's counts over the steps it reported (jobs/per-rep-counts.ts)
      a.source.add(PER_REP_SOURCE);
      a.kernels.push(c.kernels / c.steps);
      a.graphs.push(c.graphs / c.steps);
      a.memcpy.push(c.memcpy / c.steps);
      a.memset.push(c.memset / c.steps);
      a.syncs.push(c.syncs / c.steps);
      a.captured.push(c.captured);
      return;
    }
    a.source.add(
      c.source === 'cupti-nvtx' ? perRangeSource(c.range) : c.counted === 'warmup' ? WARMUP_SOURCE : 'cupti',
    );
    a.kernels.push(median(c.kernels));
    a.graphs.push(median(c.graphs));
    a.memcpy.push(median(c.memcpy));
    a.memset.push(median(c.memset));
    a.syncs.push(median(c.syncs));
    a.captured.push(c.captured);
  }

  rows(): LaunchRow[] {
    return [...this.arms].map(([arm, a]) => ({
      arm,
      source: [...a.source].join('; '),
      modes: [...a.modes],
      reps: a.reps,
      kernels_per_step: mid(a.kernels),
      graphs_per_step: mid(a.graphs),
      memcpy_per_step: mid(a.memcpy),
      memset_per_step: mid(a.memset),
      syncs_per_step: mid(a.syncs),
      captured: a.captured.length === 0 ? null : Math.max(...a.captured),
    }));
  }
}
