/**
 * A 2-rank resident command gang on one real `orch worker` with two cpu cards, driven block by
 * block through a BlockDispatcher (leases written as the grant loop would): the harness of
 * test/multirank/command-gang.test.ts and command-gang-bad-input.test.ts. Each block runs the
 * fixture program in `cmd` with FIXTURE_MODE and a fresh FIXTURE_DIR, where the fixture writes
 * what each rank saw (rank<N>.json).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after } from 'node:test';
import type { BlockJob } from '../../jobs/block-job.ts';
import { WorkloadSchema } from '../../jobs/spec.ts';
import { BlockDispatcher } from '../../orchestrator/dispatch/block-dispatcher.ts';
import { orchKeys } from '../../store/keys.ts';
import { blockJob, leaseByHand } from '../utils/block-jobs.ts';
import { freshPrefix } from '../utils/redis.ts';
import { useWorkerEnv, type WorkerTestEnv } from '../utils/worker-env.ts';

export const EXPERIMENT = 'cg';

export interface GangBlockOptions {
  helloTimeoutS?: number;
  timeoutS?: number;
  identity?: boolean;
  attempt?: number;
  extra?: Record<string, string>;
}

function gangJob(host: string, block: number, cmd: string, env: Record<string, string>, o: GangBlockOptions): BlockJob {
  return blockJob({
    experiment: EXPERIMENT,
    block,
    attempt: o.attempt ?? 1,
    epoch: 7,
    host,
    cards: [`cpu:0@${host}`, `cpu:1@${host}`],
    workload: WorkloadSchema.parse({
      runtime: 'command',
      run: {
        cmd,
        mode: 'resident',
        env,
        timeout_s: o.timeoutS ?? 30,
        hello_timeout_s: o.helloTimeoutS ?? 30,
      },
      toggles: { GRAPH: { env: 'GRAPH', on: '1', off: '0' } },
      warmup: 1,
      steps: 3,
    }),
    arms: [{ name: 'A', toggles: { GRAPH: true } }],
    sequence: ['A', 'A', 'A'],
    gates: { identity: o.identity === true ? { replays: 3, toggle: 'GRAPH' } : null, aa: false },
    warmup: 1,
    steps: 3,
  } as never);
}

/**
 * Registers the gang's worker env on the calling `describe` and returns `run`, which runs one
 * block of `cmd` in `mode` and returns how it ended and what rank N wrote (`seen(N)`).
 */
export function useCommandGang(
  tag: string,
  cmd: string,
  // a function: read as the worker starts, after the describe's own `before` hooks
  o: { host: string; workerEnv?: () => Record<string, string> },
) {
  const env: WorkerTestEnv = useWorkerEnv(tag);
  let prefix = '';
  let dispatcher: BlockDispatcher | undefined;
  // after every test of the describe, not the first: a dispatcher is done once closed
  after(() => dispatcher?.close());

  async function run(mode: string, block: number, b: GangBlockOptions = {}) {
    if (dispatcher === undefined) {
      prefix = freshPrefix();
      await env.spawn({
        host: o.host,
        prefix,
        allowCommand: true,
        cards: 'cpu:0,cpu:1',
        heartbeatMs: 3000,
        ...(o.workerEnv === undefined ? {} : { env: o.workerEnv() }),
      });
      dispatcher = new BlockDispatcher(env.redis, { prefix, pollMs: 50 });
      await env.redis.hsetnx(orchKeys(prefix).exp(EXPERIMENT), 'state', 'running');
    }
    const dir = mkdtempSync(join(env.dir, `${mode}-`));
    const job = gangJob(o.host, block, cmd, { FIXTURE_MODE: mode, FIXTURE_DIR: dir, ...(b.extra ?? {}) }, b);
    await leaseByHand(env.redis, prefix, job, 120_000);
    const t0 = Date.now();
    await dispatcher.dispatch(job);
    const end = await dispatcher.waitEnd(job, { timeoutMs: 90_000 });
    const seen = <T>(r: number) => JSON.parse(readFileSync(join(dir, `rank${r}.json`), 'utf8')) as T;
    return { end, seen, ms: Date.now() - t0 };
  }

  return { env, run, prefix: () => prefix };
}
