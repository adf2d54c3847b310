/**
 * False alarms and detection power of the nightly change detector (orchestrator/nightly/
 * detect-shift.ts), by a seeded simulation through the real detector code
 * (test/nightly/simulate-nights.ts). Series of 40 nights; a change starts at night 20.
 * Run: node --import tsx bench/nightly-detector.ts
 */
import { SHIFT_DEFAULTS } from '../orchestrator/nightly/detect-shift.ts';
import { simulateDetector } from '../test/nightly/simulate-nights.ts';

const TRIALS = 2000;
const pct = (x: number) => `${(x * 100).toFixed(1).padStart(5)} %`;
console.log(
  `detector: ${JSON.stringify(SHIFT_DEFAULTS)}; ${TRIALS} series of 40 nights per row, change at night 20, seed 1`,
);
console.log('noise  shift(sd)  false alarms/night  any alarm in 40 nights  detected ≤1 night  ≤3 nights  ≤7 nights');
for (const noise of ['normal', 't3'] as const) {
  for (const shift of [0, 1, 2, 3, 5, 8]) {
    const r = simulateDetector({ nights: 40, cv: 0.01, noise, shift, at: 20, trials: TRIALS, seed: 1 });
    const power =
      shift === 0 ? '        -          -          -' : `${pct(r.within[1])}  ${pct(r.within[3])}  ${pct(r.within[7])}`;
    console.log(
      `${noise.padEnd(6)} ${String(shift).padStart(9)}  ${pct(r.falseAlarmPerNight).padStart(18)}  ${pct(r.anyFalseAlarm).padStart(22)}  ${power}`,
    );
  }
}
