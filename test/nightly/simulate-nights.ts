/**
 * A seeded simulation of per-night medians run through the real detector (detect-shift.ts):
 * false alarms on series with no change, and detection of a step change of `shift` noise
 * standard deviations at a known night. Noise is normal, or Student-t with 3 degrees of freedom
 * (the occasional bad night a shared cluster gives).
 */
import { mulberry32 } from '../../jobs/seeded-random.ts';
import { detectShifts, SHIFT_DEFAULTS, type ShiftOptions } from '../../orchestrator/nightly/detect-shift.ts';

export type Noise = 'normal' | 't3';

function normal(rand: () => number): number {
  const u = Math.max(rand(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
}

/** Student-t(3) scaled to unit variance (t3's variance is 3). */
export function t3(rand: () => number): number {
  const z = normal(rand);
  const chi = normal(rand) ** 2 + normal(rand) ** 2 + normal(rand) ** 2;
  return z / Math.sqrt(chi / 3) / Math.sqrt(3);
}

export interface SimSeries {
  nights: number;
  /** noise sd relative to the level (0.01 = 1 % night-to-night) */
  cv: number;
  noise: Noise;
  /** step change in noise sds, from night `at` on (0: none) */
  shift: number;
  at: number;
}

export function simulateSeries(p: SimSeries, rand: () => number): number[] {
  const level = 10;
  const draw = p.noise === 'normal' ? normal : t3;
  return Array.from({ length: p.nights }, (_, t) => level * (1 + p.cv * (draw(rand) + (t >= p.at ? p.shift : 0))));
}

export interface SimResult {
  /** alarms per tested night on series without a change */
  falseAlarmPerNight: number;
  /** share of change-free series of `nights` nights with at least one alarm */
  anyFalseAlarm: number;
  /** share of series whose change was detected within 1, 3, 7 nights of it (no earlier alarm) */
  within: Record<1 | 3 | 7, number>;
}

export function simulateDetector(
  p: Omit<SimSeries, 'shift'> & { shift: number; trials: number; seed: number },
  o: ShiftOptions = SHIFT_DEFAULTS,
): SimResult {
  const rand = mulberry32(p.seed);
  let alarms = 0;
  let tested = 0;
  let anyAlarm = 0;
  const hit = { 1: 0, 3: 0, 7: 0 };
  for (let i = 0; i < p.trials; i++) {
    const quiet = detectShifts(simulateSeries({ ...p, shift: 0 }, rand), o);
    alarms += quiet.length;
    tested += p.nights - o.minBaseline;
    if (quiet.length > 0) anyAlarm++;
    if (p.shift === 0) continue;
    const shifted = detectShifts(simulateSeries(p, rand), o);
    const first = shifted.find((a) => a.night >= p.at);
    const early = shifted.some((a) => a.night < p.at);
    if (!first || early) continue;
    const delay = first.night - p.at + 1;
    for (const d of [1, 3, 7] as const) if (delay <= d) hit[d]++;
  }
  return {
    falseAlarmPerNight: alarms / tested,
    anyFalseAlarm: anyAlarm / p.trials,
    within: { 1: hit[1] / p.trials, 3: hit[3] / p.trials, 7: hit[7] / p.trials },
  };
}
