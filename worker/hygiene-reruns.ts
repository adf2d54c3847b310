/**
 * hygiene: discard (jobs/clock-hygiene.ts): a pair whose rep ran on a throttled card (a clock-event
 * reason that lowers clocks, or an XID error) is worth nothing, so the block runs that pair again
 * at its end, while its budget (block job `hygiene.reruns`, pairs) lasts. A pair is every arm's
 * k-th rep of the block (orchestrator/stats/pairing.ts pairs the k-th reps), so the re-run keeps
 * the pair's arms side by side in the block's own order. A re-run replaces the measurement it
 * repeats and names what was thrown away (`discarded_runs`), so the report counts it; a re-run
 * that is throttled again goes to the back of the queue; what the budget did not reach stays
 * throttled and the analysis leaves it out.
 */
import type { RepRef } from '../jobs/rep-ref.ts';
import type { CommitRep } from '../store/result-store.ts';

/** The pair indices k with a throttled rep, in the order first seen. */
export function throttledPairs(reps: readonly CommitRep[]): number[] {
  const ks: number[] = [];
  for (const r of reps) if ((r.result.throttled ?? []).length > 0 && !ks.includes(r.rep)) ks.push(r.rep);
  return ks;
}

/** The planned reps of pair k, in the block's order. */
export function pairReps(planned: readonly RepRef[], k: number): RepRef[] {
  return planned.filter((p) => p.rep === k);
}

/**
 * `reps` with each re-run in place of the measurement it repeats, whose throttle reasons go into
 * the re-run's `discarded_runs` (empty for a rep thrown away only because its pair's was throttled).
 */
export function replaceWithReruns(reps: readonly CommitRep[], reruns: readonly CommitRep[]): CommitRep[] {
  const key = (r: CommitRep) => `${r.arm}/${r.rep}`;
  const again = new Map(reruns.map((r) => [key(r), r]));
  return reps.map((old) => {
    const fresh = again.get(key(old));
    if (fresh === undefined) return old;
    const discarded = [...(old.result.discarded_runs ?? []), old.result.throttled ?? []];
    return { ...fresh, result: { ...fresh.result, discarded_runs: discarded } };
  });
}

/**
 * Runs throttled pairs again until none is left or the budget is spent. `measure` runs one list
 * of reps (the pipeline's loop, with its foreign-process looks and cancel) as re-run `round`;
 * null when it stopped early, which keeps what was measured before.
 */
export async function rerunThrottled(
  reps: CommitRep[],
  planned: readonly RepRef[],
  budget: number,
  measure: (list: RepRef[], round: number) => Promise<CommitRep[] | null>,
): Promise<CommitRep[]> {
  let current = reps;
  const queue = throttledPairs(current);
  for (let round = 1; round <= budget && queue.length > 0; round++) {
    const k = queue.shift() as number;
    const fresh = await measure(pairReps(planned, k), round);
    if (fresh === null) break;
    current = replaceWithReruns(current, fresh);
    if (throttledPairs(fresh).length > 0) queue.push(k);
  }
  return current;
}
