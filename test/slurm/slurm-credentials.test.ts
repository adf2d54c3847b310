/**
 * No credential stays in a plain file of a Slurm run directory (orchestrator/slurm/): `orch slurm
 * up` writes one copy of the Redis URL and the cluster secret per task; the batch script's srun
 * line, run here through bash as srun runs it on a node (SLURM_PROCID set), hands the worker its
 * own task's copies with --unlink-credential-files; a real `orch worker` given them reads them,
 * registers, and leaves neither file behind; `orch slurm down`'s removeRunDir removes the
 * directory (a copy no worker read included) and `last` when it names it. Runs without Slurm.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { batchScript } from '../../orchestrator/slurm/batch-script.ts';
import {
  credentialFiles,
  newRunDir,
  recordJob,
  removeRunDir,
  writeCredentials,
} from '../../orchestrator/slurm/slurm-run-dir.ts';
import { spawnOrch } from '../orchestrator/orch-cluster.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';

const env = privateRedis();
const SECRET = 'slurm-test-secret-0123456789abcdef';

test("the srun line hands each task's worker its own copies, which it reads once and unlinks; down removes the directory", async () => {
  const root = mkdtempSync(join(tmpdir(), 'orch-slurm-creds-'));
  try {
    const dir = newRunDir(root);
    writeCredentials(dir, 2, env.server.url, Buffer.from(SECRET));
    assert.deepEqual(readdirSync(dir).sort(), ['redis-url.0', 'redis-url.1', 'secret.0', 'secret.1']);
    for (const f of readdirSync(dir)) assert.equal(statSync(join(dir, f)).mode & 0o777, 0o600);
    recordJob(root, dir, {
      job: '77',
      prefix: 'p',
      nodes: 2,
      gpus_per_node: 0,
      time: '10',
      submitted: new Date().toISOString(),
    });

    const prefix = freshPrefix('sc');
    const script = batchScript({
      nodes: 2,
      gpusPerNode: 0,
      time: '10',
      dir,
      node: process.execPath,
      orch: join(process.cwd(), 'bin/orch.mjs'),
      prefix,
      drainSeconds: 1,
      workerArgs: [
        '--host',
        'task1.example',
        '--cpu-cards',
        '1',
        '--heartbeat-ms',
        '200',
        '--lock-dir',
        join(root, 'locks'),
      ],
    });
    // what srun runs on the node of task 1: the line without `srun … ` and the trailing `&`
    const line = /^srun --ntasks-per-node=1 (.*) &$/m.exec(script)![1]!;
    // --slurm off: no Slurm here; everything else as the node runs it
    const runner = join(root, 'task.sh');
    writeFileSync(runner, `exec ${line.replace(' worker --slurm on ', ' worker --slurm off ')}\n`);
    const task = spawn('bash', [runner], {
      env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? root, ORCH_LOG: 'warn', SLURM_PROCID: '1' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    task.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const ended = new Promise((r) => task.once('exit', r));
    try {
      await waitFor(
        'the worker of task 1 registered',
        async () => (await env.redis.exists(`${prefix}:host:task1.example:alive`)) === 1,
        { timeoutMs: 30_000 },
      );
    } catch (err) {
      assert.fail(`${(err as Error).message}: ${stderr.slice(-2000)}`);
    } finally {
      task.kill('SIGTERM');
      await ended;
    }
    assert.ok(
      !existsSync(credentialFiles(dir, 1).redisUrl) && !existsSync(credentialFiles(dir, 1).secret),
      "task 1's copies are gone once its worker read them",
    );
    assert.ok(
      existsSync(credentialFiles(dir, 0).secret),
      "task 0's copies are its own (its worker never started here)",
    );

    removeRunDir(root, dir);
    assert.ok(!existsSync(dir), 'orch slurm down removed the run directory, the unread copy with it');
    assert.ok(!existsSync(join(root, 'last')), '`last` named it: removed too');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a worker given --unlink-credential-files removes both files once read, and still runs', async () => {
  const root = mkdtempSync(join(tmpdir(), 'orch-unlink-creds-'));
  const url = join(root, 'redis-url');
  const secret = join(root, 'secret');
  writeFileSync(url, `${env.server.url}\n`, { mode: 0o600 });
  writeFileSync(secret, `${SECRET}\n`, { mode: 0o600 });
  const prefix = freshPrefix('uc');
  const w = spawnOrch(
    [
      'worker',
      '--host',
      'unlink.example',
      '--cpu-cards',
      '1',
      '--heartbeat-ms',
      '200',
      '--lock-dir',
      join(root, 'locks'),
      '--prefix',
      prefix,
      '--redis-url-file',
      url,
      '--secret-file',
      secret,
      '--unlink-credential-files',
    ],
    { ORCH_CLUSTER_SECRET: '', REDIS_URL: '' },
  );
  try {
    await waitFor(
      'the worker registered',
      async () => (await env.redis.exists(`${prefix}:host:unlink.example:alive`)) === 1,
      { timeoutMs: 30_000 },
    );
    assert.ok(!existsSync(url) && !existsSync(secret), 'both credential files are gone');
  } finally {
    w.child.kill('SIGTERM');
    await w.exited;
    rmSync(root, { recursive: true, force: true });
  }
});
