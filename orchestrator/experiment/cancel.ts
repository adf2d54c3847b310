/**
 * Cancel an experiment: mark it `cancelling`, then revoke the leases of every block attempt in
 * flight — the owning workers hear it on the revoke channel and kill the ranks at once. The
 * scheduler leader then ends each block `cancelled` (waiting blocks leave the queue), records
 * every rep that was not measured as not run, and settles the experiment `cancelled`.
 */
import type { Redis } from 'ioredis';
import { UserInputError } from '../../jobs/errors.ts';
import { LeaseStore } from '../../store/lease-store.ts';
import { ExperimentStore, type ExperimentState } from '../../store/experiment-store.ts';

export interface CancelResult {
  id: string;
  /** the state after the request: cancelling, or the state it had already ended in */
  state: ExperimentState;
  /** lease keys deleted */
  revoked: number;
}

export async function cancelExperiment(redis: Redis, prefix: string, id: string, reason = 'cancelled by orch cancel'): Promise<CancelResult> {
  const store = new ExperimentStore(redis, prefix);
  const state = await store.requestCancel(id, reason);
  if (state === null) {
    throw new UserInputError('NO_SUCH_EXPERIMENT', `no experiment "${id}" in this Redis`, { hint: 'run orch status to list experiments' });
  }
  if (state !== 'cancelling') return { id, state, revoked: 0 };
  const leases = new LeaseStore(redis, { prefix });
  let revoked = 0;
  for (const b of await store.blocks(id)) {
    if (b.phase !== 'running') continue;
    for (const part of b.gang) revoked += await leases.revoke({ cards: part.cards, epoch: part.epoch, reason });
  }
  return { id, state, revoked };
}
