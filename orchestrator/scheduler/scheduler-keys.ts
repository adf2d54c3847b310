/**
 * The scheduler's and experiments' own Redis keys, beside the shared ones in
 * orchestrator/redis/keys.ts (same prefix).
 */
import { orchKeys } from '../redis/keys.ts';

export interface SchedulerKeys {
  /** string: the leader's id, PX TTL (leader-lease.ts) */
  leader: string;
  /** counter: submission order of experiments (FIFO across experiments) */
  seq: string;
  /** sorted set: experiment id by submission order */
  experiments: string;
  /** sorted set: experiments not yet ended, by submission order (the scheduler's queue) */
  active: string;
  /** hash block index → JSON BlockState (experiment/block-state.ts) */
  blocks(experiment: string): string;
  /** hash "<workload key>" → JSON { ms_per_step, n }: what past reps took, for expected durations */
  history: string;
}

export function schedulerKeys(prefix: string): SchedulerKeys {
  return {
    leader: `${prefix}:sched:leader`,
    seq: `${prefix}:sched:seq`,
    experiments: `${prefix}:exps`,
    active: `${prefix}:sched:active`,
    blocks: (id) => `${orchKeys(prefix).exp(id)}:blocks`,
    history: `${prefix}:sched:history`,
  };
}
