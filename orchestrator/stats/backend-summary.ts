/**
 * What the measurements ran on, for the report's header: the backends the committed reps name
 * (`cpu` is graphrt's CPU emulation, not a GPU), the devices the ranks' hello lines named, and the
 * toggles some arm turned on that the backend did not have (those arms measured without them).
 */
import type { ArmSummary, BackendSummary } from './types.ts';

export function summarizeBackend(
  backends: Iterable<string>,
  devices: Iterable<string>,
  arms: readonly ArmSummary[],
): BackendSummary {
  const unsupported = new Map<string, Set<string>>();
  for (const a of arms)
    for (const u of a.unsupported)
      for (const b of u.backends) unsupported.set(u.toggle, (unsupported.get(u.toggle) ?? new Set<string>()).add(b));
  return {
    backends: [...new Set(backends)].sort(),
    devices: [...new Set(devices)].sort(),
    unsupported: [...unsupported]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([toggle, b]) => ({ toggle, backends: [...b].sort() })),
  };
}
