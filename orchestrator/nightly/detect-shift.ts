/**
 * Change detection over nights for an absolute number (one arm's per-night median step time):
 * a two-sided CUSUM on robust z-scores. Each night is standardised against the nights before it
 * since the last change — their median, and 1.4826 × MAD as the scale (floored at `floor` × the
 * median, so a run of near-identical nights does not make a rounding difference an alarm) —
 * and the CUSUM sums what exceeds `k`; it alarms when a sum passes `h`. After an alarm the new
 * regime starts where the sum last left zero (the changepoint estimate) and needs `minBaseline`
 * nights again before it is tested. Each z is clipped (a Huber-type CUSUM): a single night on
 * a busy cluster, however bad, is not a change; two or three in a row are. Pure: the same series gives the same answer, so a night's
 * result is recomputed from the stored history instead of carried between runs.
 *
 * Ratios against the control are not judged here: each night's paired verdict already has a CI
 * from inside one experiment, where the machine's drift cancels.
 */
export interface ShiftOptions {
  /** nights needed before one is tested */
  minBaseline: number;
  /** at most this many nights before tonight form its baseline */
  window: number;
  /** CUSUM allowance in robust-z units: shifts smaller than about 2k are not chased */
  k: number;
  /** CUSUM decision threshold */
  h: number;
  /** smallest scale, relative to the baseline median */
  floor: number;
  /** each night's robust z is clipped to ±clip before it is summed: one bad night cannot alarm alone */
  clip: number;
}

/** Chosen by bench/nightly-detector.ts: about 1 false alarm in 400 nights, normal or heavy-tailed noise. */
export const SHIFT_DEFAULTS: ShiftOptions = { minBaseline: 7, window: 21, k: 1, h: 6, floor: 0.002, clip: 3.5 };

export interface ShiftAt {
  /** index of the night that raised the alarm */
  night: number;
  /** first night of the new regime (the changepoint estimate) */
  from: number;
  direction: 'up' | 'down';
  /** tonight against the baseline median, relative (0.05 = 5 % higher) */
  change: number;
  baseline: number;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Every alarm the series raises, in order. */
export function detectShifts(series: readonly number[], o: ShiftOptions = SHIFT_DEFAULTS): ShiftAt[] {
  const alarms: ShiftAt[] = [];
  let start = 0;
  let up = 0;
  let down = 0;
  let upFrom = 0;
  let downFrom = 0;
  for (let t = 0; t < series.length; t++) {
    const base = series.slice(Math.max(start, t - o.window), t);
    if (base.length < o.minBaseline) continue;
    const med = median(base);
    const mad = 1.4826 * median(base.map((x) => Math.abs(x - med)));
    const scale = Math.max(mad, o.floor * Math.abs(med), Number.MIN_VALUE);
    const z = Math.max(-o.clip, Math.min(o.clip, (series[t]! - med) / scale));
    if (up === 0) upFrom = t;
    if (down === 0) downFrom = t;
    up = Math.max(0, up + z - o.k);
    down = Math.max(0, down - z - o.k);
    if (up > o.h || down > o.h) {
      const direction = up > o.h ? 'up' : 'down';
      const from = direction === 'up' ? upFrom : downFrom;
      alarms.push({ night: t, from, direction, change: series[t]! / med - 1, baseline: med });
      start = from;
      up = 0;
      down = 0;
    }
  }
  return alarms;
}

/** The alarm the last night of the series raised, if it did. */
export function shiftTonight(series: readonly number[], o: ShiftOptions = SHIFT_DEFAULTS): ShiftAt | null {
  const last = detectShifts(series, o).at(-1);
  return last && last.night === series.length - 1 ? last : null;
}
