/**
 * Signed work: a worker runs only host jobs whose grant the scheduler signed with the cluster
 * secret (jobs/grant.ts), and command workloads only with --allow-command. Each refused job is
 * written straight into `host-<name>` (what anyone who can write to Redis could do) with a
 * hand-written lease hash for its card, so only the grant stands between it and a run; its
 * command would create a marker file, which must stay absent.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { Queue } from 'bullmq';
import type { BlockJob } from '../../jobs/block-job.ts';
import { signPayload } from '../../jobs/grant.ts';
import { WorkloadSchema } from '../../jobs/spec.ts';
import { BlockDispatcher } from '../../orchestrator/dispatch/block-dispatcher.ts';
import { hostQueue, orchKeys } from '../../store/keys.ts';
import { blockJob } from '../utils/block-jobs.ts';
import { TEST_CLUSTER_SECRET } from '../utils/cluster-secret.ts';
import { freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';
import { useWorkerEnv } from '../utils/worker-env.ts';

function commandJob(host: string, marker: string, epoch: number, experiment: string): BlockJob {
  return blockJob({
    experiment, block: 0, attempt: 1, epoch, host, cards: [`cpu:0@${host}`],
    workload: WorkloadSchema.parse({
      runtime: 'command',
      run: { cmd: `touch ${marker}; echo "step 0: 1.0"; echo "step 1: 1.0"; echo "step 2: 1.0"`, timeout_s: 30 },
      toggles: { FAST: { env: 'FAST', on: '1', off: '0' } },
      metric_source: { format: 'regex', pattern: 'step (?<step>\\d+): (?<value>[0-9.]+)', value_group: 'value', step_group: 'step' },
      warmup: 1,
      steps: 2,
    }),
    arms: [{ name: 'A', toggles: { FAST: false } }],
    sequence: ['A'],
    gates: { identity: null, aa: false },
    warmup: 1,
    steps: 2,
  });
}

describe('signed work', () => {
  const env = useWorkerEnv('signed');

  /** A lease hash as acquire-gang.lua writes it, by hand: the job's card is leased under its epoch. */
  async function leaseByHand(prefix: string, job: BlockJob): Promise<void> {
    for (const card of job.cards) {
      const key = orchKeys(prefix).lease(card);
      await env.redis.hset(key, { owner: job.host, epoch: job.epoch, experiment: job.experiment, block: job.block, expires: Date.now() + 60_000 });
      await env.redis.pexpire(key, 60_000);
    }
  }

  async function inject(prefix: string, data: unknown, id: string, host: string): Promise<void> {
    const q = new Queue(hostQueue(host), { connection: env.redis, prefix });
    await q.add('block', data, { jobId: id, attempts: 1 });
    await q.close();
  }

  test('without a grant, with a forged one, altered after signing, or a command on a worker without --allow-command: refused, nothing runs', async () => {
    const prefix = freshPrefix();
    const host = 's1';
    const w = await env.spawn({ host, prefix, allowCommand: false });
    const dispatcher = new BlockDispatcher(env.redis, { prefix, pollMs: 50 });
    try {
      const cases: { name: string; make(job: BlockJob): unknown; code: string }[] = [
        { name: 'unsigned', make: (job) => job, code: 'GRANT_MISSING' },
        { name: 'forged', make: (job) => signPayload(job, randomBytes(32)), code: 'GRANT_INVALID' },
        { name: 'altered', make: (job) => ({ ...signPayload(job, TEST_CLUSTER_SECRET), epoch: job.epoch + 1 }), code: 'GRANT_INVALID' },
        { name: 'garbage-grant', make: (job) => ({ ...job, grant: { v: 1, mac: 'zz' } }), code: 'GRANT_INVALID' },
        { name: 'not-allowed', make: (job) => signPayload(job, TEST_CLUSTER_SECRET), code: 'COMMAND_NOT_ALLOWED' },
      ];
      for (const [i, c] of cases.entries()) {
        const marker = join(env.dir, `ran-${c.name}`);
        const job = commandJob(host, marker, 1000 + i, `x${i}`);
        await leaseByHand(prefix, job);
        const id = BlockDispatcher.jobId(job);
        await inject(prefix, c.make(job), id, host);
        const end = await dispatcher.waitEnd(job, { timeoutMs: 30_000 });
        assert.equal(end.state, 'failed', `${c.name}: ${JSON.stringify(end)}`);
        assert.ok(end.state === 'failed' && end.unrecoverable, `${c.name}: refused unrecoverably`);
        assert.ok(existsSync(marker) === false, `${c.name}: the command ran (${marker} exists)`);
        // the job's end reaches Redis before the worker's log line has crossed its stderr pipe
        // (a fresh-clone CI read the end first once): wait for the line, with a deadline
        await waitFor(`${c.name}: the worker logs ${c.code}`, () => w.log().includes(`"code":"${c.code}"`), { timeoutMs: 10_000 })
          .catch((err: Error) => assert.fail(`${err.message}\n${w.log().slice(-3000)}`));
      }
      // the log names what was refused but never the secret
      assert.ok(!w.log().includes(TEST_CLUSTER_SECRET.toString('utf8')), 'the secret appears in the worker log');
    } finally {
      await dispatcher.close();
    }
  });

  test('control: the same command, signed by the dispatcher, runs on a worker with --allow-command', async () => {
    const prefix = freshPrefix();
    const host = 's2';
    await env.spawn({ host, prefix, allowCommand: true });
    const dispatcher = new BlockDispatcher(env.redis, { prefix, pollMs: 50 });
    try {
      const marker = join(env.dir, 'ran-signed');
      const job = commandJob(host, marker, 2000, 'ok');
      await leaseByHand(prefix, job);
      await dispatcher.dispatch(job);
      const end = await dispatcher.waitEnd(job, { timeoutMs: 60_000 });
      assert.ok(existsSync(marker), `the signed command did not run: ${JSON.stringify(end)}`);
    } finally {
      await dispatcher.close();
    }
  });
});
