/** Block-job payloads for tests: a tiny native chain workload on the CPU backend. */
import type { Redis } from 'ioredis';
import type { BlockJob } from '../../jobs/block-job.ts';
import { BlockDispatcher, type DispatchOptions } from '../../orchestrator/dispatch/block-dispatcher.ts';
import { orchKeys } from '../../store/keys.ts';

export function blockJob(
  p: Pick<BlockJob, 'experiment' | 'block' | 'attempt' | 'epoch' | 'host' | 'cards'> & Partial<BlockJob>,
): BlockJob {
  return {
    spec_hash: 'test',
    workload: { runtime: 'native', backend: 'cpu', kind: 'chain', params: { kernels: 4 }, warmup: 1, steps: 2 },
    arms: [
      { name: 'A', toggles: { graph: false } },
      { name: 'B', toggles: { graph: true } },
    ],
    sequence: ['A', 'B', 'B', 'A'],
    gates: { identity: { replays: 3 }, aa: false },
    warmup: 1,
    steps: 2,
    foreign_process: 'fail',
    ...p,
  };
}

/**
 * A dispatcher for tests that send block jobs of experiments never submitted: it first writes a
 * bare experiment hash, as submit would have, since the worker's writes (commit-block.lua,
 * fail-block.lua, append-event.lua) refuse an experiment that does not exist.
 */
export class BareExperimentDispatcher extends BlockDispatcher {
  constructor(
    private readonly redis: Redis,
    private readonly opts: DispatchOptions & { prefix: string },
  ) {
    super(redis, opts);
  }

  override async dispatch(job: BlockJob): Promise<string> {
    await this.redis.hsetnx(orchKeys(this.opts.prefix).exp(job.experiment), 'state', 'running');
    return super.dispatch(job);
  }
}

/** A lease hash as acquire-gang.lua writes it, by hand: each of `job`'s cards leased to its host under its epoch. */
export async function leaseByHand(redis: Redis, prefix: string, job: BlockJob, ttlMs = 60_000): Promise<void> {
  for (const card of job.cards) {
    const key = orchKeys(prefix).lease(card);
    await redis.hset(key, {
      owner: job.host,
      epoch: job.epoch,
      experiment: job.experiment,
      block: job.block,
      expires: Date.now() + ttlMs,
    });
    await redis.pexpire(key, ttlMs);
  }
}
