/**
 * Clock and co-tenant hygiene of a rep (issue: device truth): the card's clock-event reasons
 * NVML gave before the rep's first step and after its last, OR-ed, and the XID errors and volatile
 * uncorrected ECC errors seen during it. A rep is throttled when a reason that lowers clocks under
 * load was set (power cap, thermal or hardware slowdown, power brake) or an XID or ECC error came; `gpu_idle`, `applications_clocks_setting`,
 * `sync_boost` and `display_clock_setting` say nothing about the rep's speed. orch never changes a
 * clock: it records them, and the spec's `hygiene` says what a throttled rep is worth.
 */
import type { ClockReading } from './graphrt-protocol.ts';
import { isOneOf } from './one-of.ts';

export const THROTTLE_REASONS = [
  'sw_power_cap',
  'hw_slowdown',
  'sw_thermal_slowdown',
  'hw_thermal_slowdown',
  'hw_power_brake_slowdown',
] as const;

/** warn: reported only; flag (the default): reported and marked; discard: the rep is not used (its pair neither). */
export const HYGIENE_POLICIES = ['warn', 'flag', 'discard'] as const;
export type HygienePolicy = (typeof HYGIENE_POLICIES)[number];

/** Pairs a block may run again under hygiene: discard: the spec's hygiene_reruns, else half its reps rounded up. */
export function rerunBudget(spec: {
  hygiene?: HygienePolicy | undefined;
  hygiene_reruns?: number | undefined;
  reps: number;
}): number {
  if (spec.hygiene !== 'discard') return 0;
  return spec.hygiene_reruns ?? Math.ceil(spec.reps / 2);
}

export interface RepDeviceReadings {
  clocks?: { start: ClockReading; end: ClockReading } | undefined;
  xid_events?: number | undefined;
  ecc_errors?: number | undefined;
}

/** Why a rep is throttled (sorted reasons, then `xid ×N`), over every rank's readings; empty when it is not. */
export function throttleOf(ranks: readonly RepDeviceReadings[]): string[] {
  const reasons = new Set<string>();
  let xid = 0;
  let ecc = 0;
  for (const r of ranks) {
    for (const reading of r.clocks === undefined ? [] : [r.clocks.start, r.clocks.end]) {
      for (const why of reading.reasons) if (isOneOf(THROTTLE_REASONS, why)) reasons.add(why);
    }
    xid += r.xid_events ?? 0;
    ecc += r.ecc_errors ?? 0;
  }
  return [...[...reasons].sort(), ...(xid > 0 ? [`xid ×${xid}`] : []), ...(ecc > 0 ? [`ecc ×${ecc}`] : [])];
}
