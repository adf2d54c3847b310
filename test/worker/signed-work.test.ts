/**
 * Signed work: a worker runs only host jobs whose grant the scheduler signed with the cluster
 * secret (jobs/grant.ts) over the job's queue, name, id, options and payload, each once (its
 * nonce consumed in Redis), and command workloads only with --allow-command. Each refused job is
 * written straight into `host-<name>` (what anyone who can write to Redis could do) with a
 * hand-written lease hash for its card, so only the grant stands between it and a run; its
 * command would create a marker file, which must stay absent. A copy of a signed job — re-added
 * under a job scheduler (`repeat`), under another id, or under its own id after the original was
 * removed — must not run its command again: the marker has exactly one line. Build jobs
 * (`build-<name>`) pass the same gate.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { Job, Queue } from 'bullmq';
import type { BlockJob } from '../../jobs/block-job.ts';
import { WorkloadSchema } from '../../jobs/spec.ts';
import { BlockDispatcher } from '../../orchestrator/dispatch/block-dispatcher.ts';
import { hostQueue } from '../../store/keys.ts';
import { blockJob, leaseByHand } from '../utils/block-jobs.ts';
import { TEST_CLUSTER_SECRET } from '../utils/cluster-secret.ts';
import { freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';
import { useWorkerEnv } from '../utils/worker-env.ts';

function commandJob(
  host: string,
  marker: string,
  epoch: number,
  experiment: string,
  cmd = `touch ${marker}`,
): BlockJob {
  return blockJob({
    experiment,
    block: 0,
    attempt: 1,
    epoch,
    host,
    cards: [`cpu:0@${host}`],
    workload: WorkloadSchema.parse({
      runtime: 'command',
      run: { cmd: `${cmd}; echo "step 0: 1.0"; echo "step 1: 1.0"; echo "step 2: 1.0"`, timeout_s: 30 },
      toggles: { FAST: { env: 'FAST', on: '1', off: '0' } },
      metric_source: {
        format: 'regex',
        pattern: 'step (?<step>\\d+): (?<value>[0-9.]+)',
        value_group: 'value',
        step_group: 'step',
      },
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

  async function inject(prefix: string, data: unknown, id: string, host: string): Promise<void> {
    const q = new Queue(hostQueue(host), { connection: env.redis, prefix });
    await q.add('block', data, { jobId: id, attempts: 1 });
    await q.close();
  }

  /** The data of a job as the dispatcher signed and added it (what an attacker reading Redis copies). */
  async function signedData(prefix: string, job: BlockJob, secret?: Buffer): Promise<Record<string, unknown>> {
    const d = new BlockDispatcher(env.redis, { prefix, pollMs: 50, ...(secret ? { secret } : {}) });
    try {
      await d.dispatch(job);
      const q = d.queue(job.host);
      const added = await Job.fromId(q, BlockDispatcher.jobId(job));
      // taken off the queue before a worker sees it: only its data is kept
      await added!.remove();
      return added!.data as Record<string, unknown>;
    } finally {
      await d.close();
    }
  }

  test('without a grant, with a forged one, altered after signing, or a command on a worker without --allow-command: refused, nothing runs', async () => {
    const prefix = freshPrefix();
    const host = 's1';
    // stopped while the signed payloads are made: a dispatched job is taken off before it runs
    const dispatcher = new BlockDispatcher(env.redis, { prefix, pollMs: 50 });
    try {
      const cases: { name: string; make(job: BlockJob): Promise<unknown>; code: string }[] = [
        { name: 'unsigned', make: async (job) => job, code: 'GRANT_MISSING' },
        { name: 'forged', make: (job) => signedData(prefix, job, randomBytes(32)), code: 'GRANT_INVALID' },
        {
          name: 'altered',
          make: async (job) => ({ ...(await signedData(prefix, job)), epoch: job.epoch + 1 }),
          code: 'GRANT_INVALID',
        },
        { name: 'garbage-grant', make: async (job) => ({ ...job, grant: { v: 1, mac: 'zz' } }), code: 'GRANT_INVALID' },
        { name: 'not-allowed', make: (job) => signedData(prefix, job), code: 'COMMAND_NOT_ALLOWED' },
      ];
      const made = [];
      for (const [i, c] of cases.entries()) {
        const marker = join(env.dir, `ran-${c.name}`);
        const job = commandJob(host, marker, 1000 + i, `x${i}`);
        made.push({ c, marker, job, data: await c.make(job) });
      }
      const w = await env.spawn({ host, prefix, allowCommand: false });
      for (const { c, marker, job, data } of made) {
        await leaseByHand(env.redis, prefix, job);
        const id = BlockDispatcher.jobId(job);
        await inject(prefix, data, id, host);
        const end = await dispatcher.waitEnd(job, { timeoutMs: 30_000 });
        assert.equal(end.state, 'failed', `${c.name}: ${JSON.stringify(end)}`);
        assert.ok(end.state === 'failed' && end.unrecoverable, `${c.name}: refused unrecoverably`);
        assert.ok(existsSync(marker) === false, `${c.name}: the command ran (${marker} exists)`);
        // the job's end reaches Redis before the worker's log line has crossed its stderr pipe
        // (a fresh-clone CI read the end first once): wait for the line, with a deadline
        await waitFor(`${c.name}: the worker logs ${c.code}`, () => w.log().includes(`"code":"${c.code}"`), {
          timeoutMs: 10_000,
        }).catch((err: Error) => assert.fail(`${err.message}\n${w.log().slice(-3000)}`));
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
      await leaseByHand(env.redis, prefix, job);
      await dispatcher.dispatch(job);
      const end = await dispatcher.waitEnd(job, { timeoutMs: 60_000 });
      assert.ok(existsSync(marker), `the signed command did not run: ${JSON.stringify(end)}`);
    } finally {
      await dispatcher.close();
    }
  });
  test('a signed job runs once: re-added under a job scheduler (repeat), under a new id, or under its own id after removal, its command does not run again', async () => {
    const prefix = freshPrefix();
    const host = 's3';
    const w = await env.spawn({ host, prefix, allowCommand: true });
    const dispatcher = new BlockDispatcher(env.redis, { prefix, pollMs: 50 });
    const q = new Queue(hostQueue(host), { connection: env.redis, prefix });
    const marker = join(env.dir, 'ran-once');
    const runs = () => (existsSync(marker) ? readFileSync(marker, 'utf8').split('\n').filter(Boolean).length : 0);
    try {
      const job = commandJob(host, marker, 3000, 'once', `echo ran >> ${marker}`);
      await leaseByHand(env.redis, prefix, job);
      await dispatcher.dispatch(job);
      // no experiment in Redis: its commit is refused after the command ran, which is all this test needs
      const end = await dispatcher.waitEnd(job, { timeoutMs: 60_000 });
      assert.equal(runs(), 1, `the signed job ran once: ${JSON.stringify(end)}`);
      const id = BlockDispatcher.jobId(job);
      const original = (await Job.fromId(q, id))!;
      const signed = original.data as Record<string, unknown>;
      // whoever re-adds the job can write Redis: they hold its card's lease for it, so only the
      // grant and its nonce stand between a copy and a run
      const holding = setInterval(() => void leaseByHand(env.redis, prefix, job).catch(() => undefined), 50);
      try {
        // 1. its data as a job scheduler's template, every 200 ms (the jobs carry repeat options and a scheduler key)
        await q.upsertJobScheduler('again', { every: 200 }, { name: 'block', data: signed, opts: { attempts: 1 } });
        const copies = async () =>
          (await q.getJobs(['completed', 'failed'])).filter((j) => j.id?.startsWith('repeat:again:'));
        await waitFor(
          "the scheduler's copies end (three, or one and the scheduler removed)",
          async () => {
            const ended = (await copies()).length;
            return ended >= 3 || (ended >= 1 && (await q.getJobScheduler('again')) === undefined) ? ended : null;
          },
          { timeoutMs: 30_000, intervalMs: 100 },
        );
        await q.removeJobScheduler('again');
        assert.equal(runs(), 1, `a copy made by a job scheduler ran the command (${runs()} runs)`);
        for (const c of await copies())
          assert.equal(
            c.failedReason?.includes('refused') ?? false,
            true,
            `copy ${c.id}: ${c.failedReason ?? 'completed'}`,
          );

        // 2. the same data under a new job id
        await leaseByHand(env.redis, prefix, job);
        await q.add('block', signed, { jobId: `${id}-again`, attempts: 1 });
        await waitFor(
          'the copy under a new id ends',
          async () =>
            (await q.getJobState(`${id}-again`)) === 'failed' || (await q.getJobState(`${id}-again`)) === 'completed'
              ? true
              : null,
          { timeoutMs: 30_000, intervalMs: 100 },
        );
        assert.equal(runs(), 1, `a copy under a new job id ran the command (${runs()} runs)`);

        // 3. the original removed, the same data added again under its own id and options: the nonce was used
        await original.remove();
        await leaseByHand(env.redis, prefix, job);
        await q.add('block', signed, { jobId: id, attempts: 1, removeOnComplete: false, removeOnFail: false });
        await waitFor(
          'the replay ends',
          async () =>
            (await q.getJobState(id)) === 'failed' || (await q.getJobState(id)) === 'completed' ? true : null,
          { timeoutMs: 30_000, intervalMs: 100 },
        );
        assert.equal(runs(), 1, `a replay under its own id ran the command (${runs()} runs)`);
        assert.match((await Job.fromId(q, id))!.failedReason ?? '', /GRANT_REPLAYED|nonce was used before/);
      } finally {
        clearInterval(holding);
      }

      await waitFor('the worker logs the replay', () => w.log().includes('"code":"GRANT_REPLAYED"'), {
        timeoutMs: 10_000,
      });
      // counted where orch status reads them
      const { RefusedJobs } = await import('../../store/refused-jobs.ts');
      const counts = await new RefusedJobs(env.redis, prefix).counts();
      assert.equal(counts['host/GRANT_REPLAYED'], 1, JSON.stringify(counts));
      assert.ok((counts['host/GRANT_INVALID'] ?? 0) >= 2, JSON.stringify(counts));
    } finally {
      await q.close();
      await dispatcher.close();
    }
  });

  test('build jobs too: an unsigned one builds nothing; a signed one builds, and its replay is refused before the build cache is asked', async () => {
    const { signJob } = await import('../../jobs/grant.ts');
    const { hostBuildQueue } = await import('../../store/keys.ts');
    const prefix = freshPrefix();
    const host = 's4';
    const w = await env.spawn({
      host,
      prefix,
      allowCommand: true,
      env: { ORCH_BUILD_DIR: join(env.dir, 'builds-s4') },
    });
    const q = new Queue(hostBuildQueue(host), { connection: env.redis, prefix });
    const src = join(env.dir, 'src-s4');
    const marker = join(env.dir, 'built-s4');
    mkdirSync(src);
    const build = (experiment: string) => ({
      experiment,
      host,
      attempt: 1,
      epoch: 1,
      own: true,
      workload: WorkloadSchema.parse({
        runtime: 'command',
        build: {
          cmd: `echo built >> ${marker}; mkdir -p out; echo ${experiment} > out/a`,
          artifacts: ['out/a'],
          key: { git: false, dirty_diff: false },
          dir: src,
        },
        run: { cmd: 'true', timeout_s: 30 },
        toggles: { FAST: { env: 'FAST', on: '1', off: '0' } },
        metric_source: {
          format: 'regex',
          pattern: 'step (?<step>\\d+): (?<value>[0-9.]+)',
          value_group: 'value',
          step_group: 'step',
        },
        warmup: 1,
        steps: 2,
      }),
    });
    const end = (id: string) =>
      waitFor(
        `build job ${id} ends`,
        async () => {
          const state = await q.getJobState(id);
          return state === 'completed' || state === 'failed' ? (await Job.fromId(q, id))! : null;
        },
        { timeoutMs: 30_000, intervalMs: 100 },
      );
    try {
      await q.add('build', build('unsigned'), { jobId: 'unsigned.build-a1-s4', attempts: 1 });
      assert.match((await end('unsigned.build-a1-s4')).failedReason ?? '(completed)', /GRANT_MISSING/);
      assert.equal(existsSync(marker), false, 'an unsigned build job ran its build');

      const signed = signJob(hostBuildQueue(host), 'build', 'signed.build-a1-s4', build('signed'), TEST_CLUSTER_SECRET);
      await q.add(signed.name, signed.data, signed.opts);
      const first = await end('signed.build-a1-s4');
      assert.equal(first.failedReason, undefined, `the signed build failed: ${first.failedReason}`);
      assert.equal(readFileSync(marker, 'utf8'), 'built\n');
      await first.remove();
      await q.add(signed.name, signed.data, signed.opts);
      assert.match((await end('signed.build-a1-s4')).failedReason ?? '(completed)', /GRANT_REPLAYED/);
      await waitFor('the worker logs the replay', () => w.log().includes('"code":"GRANT_REPLAYED"'), {
        timeoutMs: 10_000,
      });
      const { RefusedJobs } = await import('../../store/refused-jobs.ts');
      assert.deepEqual(await new RefusedJobs(env.redis, prefix).counts(), {
        'build/GRANT_MISSING': 1,
        'build/GRANT_REPLAYED': 1,
      });
    } finally {
      await q.close();
    }
  });
});
