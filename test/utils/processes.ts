/** Process liveness for tests: a zombie (state Z, not yet reaped by init) counts as gone. */
import { readFileSync } from 'node:fs';
import { waitFor } from './wait-for.ts';

export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Waits until every pid is gone; returns the ms it took from `since`. */
export async function waitGone(pids: number[], since: number, timeoutMs: number): Promise<number> {
  await waitFor(`pids ${pids.join(', ')} to be gone`, () => pids.every((p) => !isAlive(p)), {
    timeoutMs,
    intervalMs: 5,
  });
  return Date.now() - since;
}
