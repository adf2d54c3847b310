/** Block-job payloads for tests: a tiny native chain workload on the CPU backend. */
import type { BlockJob } from '../../jobs/block-job.ts';

export function blockJob(p: Pick<BlockJob, 'experiment' | 'block' | 'attempt' | 'epoch' | 'host' | 'cards'> & Partial<BlockJob>): BlockJob {
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
