/**
 * The environment of a user's program (worker/command/program-env.ts): a command rep run by a
 * real `orch worker --allow-command` whose own environment holds the cluster's credentials —
 * REDIS_URL with a password, the cluster secret's file, a submit token — prints its environment
 * into a file. It must hold what the spec names, PATH and the rank protocol's ORCH_*, and none of
 * the credentials, not even where the operator's ORCH_RANK_ENV names them.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { BlockJob } from '../../jobs/block-job.ts';
import { WorkloadSchema } from '../../jobs/spec.ts';
import { BlockDispatcher } from '../../orchestrator/dispatch/block-dispatcher.ts';
import { orchKeys } from '../../store/keys.ts';
import { programEnv } from '../../worker/command/program-env.ts';
import { blockJob } from '../utils/block-jobs.ts';
import { TEST_CLUSTER_SECRET } from '../utils/cluster-secret.ts';
import { freshPrefix } from '../utils/redis.ts';
import { useWorkerEnv } from '../utils/worker-env.ts';

function envDumpJob(host: string, dump: string): BlockJob {
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
        cmd: `env > ${dump}; echo "step 0: 1.0"; echo "step 1: 1.0"; echo "step 2: 1.0"`,
        timeout_s: 30,
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
    const dispatcher = new BlockDispatcher(env.redis, { prefix, pollMs: 50 });
    try {
      const job = envDumpJob(host, dump);
      for (const card of job.cards) {
        const key = orchKeys(prefix).lease(card);
        await env.redis.hset(key, {
          owner: host,
          epoch: job.epoch,
          experiment: job.experiment,
          block: 0,
          expires: Date.now() + 60_000,
        });
        await env.redis.pexpire(key, 60_000);
      }
      await env.redis.hsetnx(orchKeys(prefix).exp(job.experiment), 'state', 'running');
      await dispatcher.dispatch(job);
      const end = await dispatcher.waitEnd(job, { timeoutMs: 60_000 });
      assert.equal(end.state, 'completed', JSON.stringify(end));
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
    } finally {
      await dispatcher.close();
    }
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
