/**
 * Cancel an experiment: mark it `cancelling`, then send a cancel notice to every block attempt in
 * flight (store/cancel-notice.ts). Each owning worker aborts the rep in flight, commits the reps
 * it measured under its still-held epoch with the rest `cancelled`, and releases the leases. The
 * scheduler leader then revokes what is left (after a bounded grace, for a worker that did not
 * answer), ends each block `cancelled` (waiting blocks leave the queue, their reps `cancelled`),
 * and settles the experiment `cancelled`.
 *
 * Nothing is revoked here: a revoked gang can no longer commit, so every rep it had measured
 * would be lost.
 */
import type { Redis } from 'ioredis';
import { UserInputError } from '../../jobs/errors.ts';
import { publishCancel } from '../../store/cancel-notice.ts';
import { type ExperimentState, ExperimentStore } from '../../store/experiment-store.ts';
import { wakeScheduler } from '../../store/scheduler-wake.ts';

export interface CancelResult {
  id: string;
  /** the state after the request: cancelling, or the state it had already ended in */
  state: ExperimentState;
  /** gang parts told to stop (one per host of each running block) */
  notified: number;
}

export async function cancelExperiment(
  redis: Redis,
  prefix: string,
  id: string,
  reason = 'cancelled by orch cancel',
): Promise<CancelResult> {
  const store = new ExperimentStore(redis, prefix);
  const state = await store.requestCancel(id, reason);
  if (state === null) {
    throw new UserInputError('NO_SUCH_EXPERIMENT', `no experiment "${id}" in this Redis`, {
      hint: 'run orch status to list experiments',
    });
  }
  if (state !== 'cancelling') return { id, state, notified: 0 };
  let notified = 0;
  for (const b of await store.blocks(id)) {
    if (b.phase !== 'running') continue;
    for (const part of b.gang) {
      await publishCancel(redis, prefix, part, reason);
      notified++;
    }
  }
  // its waiting blocks leave the queue at the leader's next pass: now, not at its safety tick
  await wakeScheduler(redis, prefix);
  return { id, state, notified };
}
