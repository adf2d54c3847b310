/**
 * B relative to A, unpaired, on the log scale: Welch's t on the natural log of each sample's
 * values (block means), the difference of logs being the log of the ratio B/A. Back-transformed,
 * the estimate and both CI ends are ratios minus one, so the interval never reaches −100 %
 * however short the run: a step time cannot fall by more than all of it. A CI of the linear
 * difference divided by A's mean does, with few blocks and a wide spread (−180 % for two blocks a
 * side), which is no statement about a time at all. Null where a value is not positive (no log).
 */
import { type WelchTest, welchT } from './welch.ts';

export interface LogRatio {
  /** Welch's t on ln(values): diff is ln(B/A) of the geometric means; null test when a value is not positive */
  welch: WelchTest;
  /** B/A − 1 (geometric means) and its CI, back-transformed from the log scale */
  relative: { estimate: number | null; ci: [number, number] | null };
}

export function logRatio(a: readonly number[], b: readonly number[], alpha: number): LogRatio {
  if (![...a, ...b].every((x) => x > 0 && Number.isFinite(x))) {
    return {
      welch: { n: [a.length, b.length], diff: null, se: null, df: null, t: null, p: null, ci: null },
      relative: { estimate: null, ci: null },
    };
  }
  const welch = welchT(a.map(Math.log), b.map(Math.log), alpha);
  return {
    welch,
    relative: {
      estimate: welch.diff === null ? null : Math.expm1(welch.diff),
      ci: welch.ci === null ? null : [Math.expm1(welch.ci[0]), Math.expm1(welch.ci[1])],
    },
  };
}
