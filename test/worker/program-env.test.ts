/**
 * The environment of a user's program (worker/command/program-env.ts): a command rep run by a
 * real `orch worker --allow-command` whose own environment holds the cluster's credentials —
 * REDIS_URL with a password, the cluster secret's file, a submit token — prints its environment
 * into a file. It must hold what the spec names, PATH and the rank protocol's ORCH_*, and none of
 * the credentials, not even where the operator's ORCH_RANK_ENV names them. A root worker runs it
 * as orch-run unless told otherwise (worker/run-as.ts).
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { BlockJob } from '../../jobs/block-job.ts';
import { WorkloadSchema } from '../../jobs/spec.ts';
import { BlockDispatcher } from '../../orchestrator/dispatch/block-dispatcher.ts';
import { orchKeys } from '../../store/keys.ts';
import { ROOT_BUILD_ROOT } from '../../worker/builds/build-cache.ts';
import { programEnv } from '../../worker/command/program-env.ts';
import { DEFAULT_RUN_AS, resolveRunAs } from '../../worker/run-as.ts';
import { blockJob, leaseByHand } from '../utils/block-jobs.ts';
import { TEST_CLUSTER_SECRET } from '../utils/cluster-secret.ts';
import { freshPrefix } from '../utils/redis.ts';
import { useWorkerEnv } from '../utils/worker-env.ts';
import { RUN_AS_SELF } from '../utils/worker-process.ts';

/** One block of a command workload whose every rep runs `cmd` on `host`'s cpu:0 (in `cwd`: default the worker's). */
function commandJob(host: string, cmd: string, cwd?: string): BlockJob {
  return blockJob({
    experiment: 'env-dump',
    block: 0,
    attempt: 1,
    epoch: 7,
    host,
    cards: [`cpu:0@${host}`],
    workload: WorkloadSchema.parse({
      runtime: 'command',
      run: {
        cmd: `${cmd}; echo "step 0: 1.0"; echo "step 1: 1.0"; echo "step 2: 1.0"`,
        timeout_s: 30,
        ...(cwd === undefined ? {} : { cwd }),
        env: { SPEC_VAR: 'from-spec' },
      },
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
    arms: [{ name: 'A', toggles: { FAST: true } }],
    sequence: ['A'],
    gates: { identity: null, aa: false },
    warmup: 1,
    steps: 2,
  });
}

describe('the environment of a user program', () => {
  const env = useWorkerEnv('progenv');

  /** Dispatches `job` under leases of its cards, as the scheduler would, and waits for its end. */
  async function runBlock(prefix: string, job: BlockJob): Promise<void> {
    const dispatcher = new BlockDispatcher(env.redis, { prefix, pollMs: 50 });
    try {
      await leaseByHand(env.redis, prefix, job);
      await env.redis.hsetnx(orchKeys(prefix).exp(job.experiment), 'state', 'running');
      await dispatcher.dispatch(job);
      const end = await dispatcher.waitEnd(job, { timeoutMs: 60_000 });
      assert.equal(end.state, 'completed', JSON.stringify(end));
    } finally {
      await dispatcher.close();
    }
  }

  test("a command rep sees the spec's variables, PATH and ORCH_*, never REDIS_URL, the secret, its file or a submit token", async () => {
    const prefix = freshPrefix();
    const host = 'pe1';
    const secretFile = join(env.dir, 'cluster-secret');
    writeFileSync(secretFile, TEST_CLUSTER_SECRET, { mode: 0o600 });
    const dump = join(env.dir, 'env.txt');
    const worker = await env.spawn({
      host,
      prefix,
      allowCommand: true,
      env: {
        ORCH_CLUSTER_SECRET_FILE: secretFile,
        ORCH_SUBMIT_TOKEN: 'submit-token-value-0123456789',
        ORCH_SUBMIT_TOKEN_FILE: join(env.dir, 'submit-token'),
        // the operator passes a variable on, and tries to pass the credentials too
        ORCH_RANK_ENV: 'FIXTURE_*,OPERATOR_VAR,REDIS_URL,ORCH_CLUSTER_SECRET*',
        OPERATOR_VAR: 'passed',
        UNNAMED_VAR: 'kept-back',
      },
    });
    {
      await runBlock(prefix, commandJob(host, `env > ${dump}`));
      const text = readFileSync(dump, 'utf8');
      const names = new Set(text.split('\n').map((l) => l.split('=')[0]));
      for (const bad of [
        'REDIS_URL',
        'ORCH_CLUSTER_SECRET',
        'ORCH_CLUSTER_SECRET_FILE',
        'ORCH_SUBMIT_TOKEN',
        'ORCH_SUBMIT_TOKEN_FILE',
        'UNNAMED_VAR',
        'ORCH_PREFIX',
      ]) {
        assert.ok(!names.has(bad), `the user's program got ${bad}:\n${text}`);
      }
      assert.ok(
        !text.includes(env.server.url) && !text.includes(secretFile),
        `the Redis URL or the secret's path reached the program:\n${text}`,
      );
      for (const good of ['PATH', 'HOME', 'SPEC_VAR', 'FAST', 'ORCH_ARM', 'ORCH_STEPS', 'OPERATOR_VAR'])
        assert.ok(names.has(good), `the program lacks ${good}:\n${text}`);
      assert.match(text, /^FAST=1$/m);
      assert.match(text, /^SPEC_VAR=from-spec$/m);
      // nor is it in the worker's own environment block, which a program of its user could read
      const environ = readFileSync(`/proc/${worker.child.pid}/environ`, 'latin1').split('\0');
      assert.ok(
        !environ.some((e) => e.startsWith('REDIS_URL=') || e.includes(env.server.url)),
        `REDIS_URL is still in /proc/${worker.child.pid}/environ`,
      );
    }
  });

  test('a root worker with --allow-command runs programs as orch-run unless told --run-as none, which warns', {
    skip: process.getuid?.() !== 0 && 'not root: only root can switch to another user',
    timeout: 120_000,
  }, async () => {
    // the program's user must pass through the test's directory to write its answer
    chmodSync(env.dir, 0o755);
    const out = mkdtempSync(join(env.dir, 'uid-'));
    chmodSync(out, 0o777);
    const uidOf = async (host: string, args: string[] | 'default') => {
      const prefix = freshPrefix();
      const w = await env.spawn({
        host,
        prefix,
        allowCommand: true,
        ...(args === 'default' ? { defaultRunAs: true } : { args }),
        env: { ORCH_BUILD_DIR: '' },
      });
      // in a directory the run-as user may enter: the worker's cwd (the checkout) may be under /root
      await runBlock(prefix, commandJob(host, `id -u > ${join(out, host)}`, out));
      return { uid: Number(readFileSync(join(out, host), 'utf8').trim()), log: w.log() };
    };
    const byDefault = await uidOf('ru1', 'default');
    const orchRun = resolveRunAs(DEFAULT_RUN_AS, { create: false, log: () => {} });
    assert.equal(byDefault.uid, orchRun.uid, 'the default runs the program as orch-run');
    assert.notEqual(orchRun.uid, 0);
    // its build cache is root's default, outside /root, shared with orch-run's group
    assert.equal(statSync(ROOT_BUILD_ROOT).gid, orchRun.gid);
    assert.doesNotMatch(byDefault.log, /users' programs and builds run as root/);
    const asSelf = await uidOf('ru2', RUN_AS_SELF);
    assert.equal(asSelf.uid, 0, "--run-as none keeps the worker's user");
    assert.match(
      asSelf.log,
      /--run-as none: users' programs and builds run as root and can read every file of this host/,
    );
  });

  test('programEnv: the credentials never pass, whoever names them', () => {
    const host = {
      PATH: '/bin',
      HOME: '/h',
      REDIS_URL: 'redis://:pw@h',
      ORCH_CLUSTER_SECRET_FILE: '/s',
      ORCH_SUBMIT_TOKEN: 't',
      NCCL_X: '1',
      OTHER: 'o',
      ORCH_RANK_ENV: 'NCCL_*,REDIS_URL',
    };
    assert.deepEqual(programEnv({ REDIS_URL: 'redis://spec', CUDA_VISIBLE_DEVICES: 'GPU-1' }, host), {
      PATH: '/bin',
      HOME: '/h',
      NCCL_X: '1',
      CUDA_VISIBLE_DEVICES: 'GPU-1',
    });
    assert.throws(() => programEnv({}, { ORCH_RANK_ENV: 'A B' }), /ORCH_RANK_ENV: "A B" is not a variable name/);
    // graphrt's: its own knobs pass, the rendezvous secret only as the rank's own
    const worker = { PATH: '/bin', GRAPHRT_PLANT: '2', GRAPHRT_RENDEZVOUS_SECRET: 'stale', REDIS_URL: 'redis://x' };
    assert.deepEqual(programEnv({}, worker, ['GRAPHRT_*']), { PATH: '/bin', GRAPHRT_PLANT: '2' });
    assert.deepEqual(programEnv({ GRAPHRT_RENDEZVOUS_SECRET: 'mine' }, worker, ['GRAPHRT_*']), {
      PATH: '/bin',
      GRAPHRT_PLANT: '2',
      GRAPHRT_RENDEZVOUS_SECRET: 'mine',
    });
  });
});
