// What a worker under Slurm takes from its job step's environment (jobs/slurm-allocation.ts), the
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// cards it registers (worker/slurm/slurm-cards.ts) and the batch script orch slurm up submits
// (orchestrator/slurm/batch-script.ts). Pure: the real daemons are test/slurm/slurm.test.ts's.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseNodeAddr, parseSqueueEnd, slurmAllocation, slurmHostName } from '../../jobs/slurm-allocation.ts';
import { batchScript } from '../../orchestrator/slurm/batch-script.ts';
import { slurmEnv } from '../../orchestrator/slurm/slurm-commands.ts';
import { describeRankExit } from '../../worker/rank-runner.ts';
import { slurmCards } from '../../worker/slurm/slurm-cards.ts';

const step = {
  SLURM_JOB_ID: '42',
  SLURMD_NODENAME: 'gpu07',
  SLURM_JOB_NODELIST: 'gpu[07-08]',
  SLURM_JOB_PARTITION: 'h200',
};

test("the step's GPUs: SLURM_STEP_GPUS over SLURM_JOB_GPUS over CUDA_VISIBLE_DEVICES; the end from SLURM_JOB_END_TIME over squeue's", () => {
  const a = slurmAllocation(
    {
      ...step,
      SLURM_STEP_GPUS: '2,3',
      SLURM_JOB_GPUS: '0,1,2,3',
      CUDA_VISIBLE_DEVICES: '0,1',
      SLURM_JOB_END_TIME: '1800000000',
    },
    5,
  );
  assert.deepEqual(a, {
    provenance: { job: '42', nodes: 'gpu[07-08]', partition: 'h200', node: 'gpu07', end: 1_800_000_000_000 },
    gpus: [2, 3],
    gpusFrom: 'SLURM_STEP_GPUS',
  });
  assert.deepEqual(slurmAllocation({ ...step, CUDA_VISIBLE_DEVICES: '1' }, 5).gpus, [1]);
  assert.equal(slurmAllocation({ ...step }, 5).provenance.end, 5);
  assert.deepEqual(slurmAllocation({ ...step }, null).gpus, []);
  assert.equal(slurmHostName({ node: 'gpu07', job: '42' }), 'gpu07-slurm42');
});

test('a step environment orch cannot read is refused with the fix', () => {
  assert.throws(
    () => slurmAllocation({ SLURMD_NODENAME: 'n' }, null),
    (e: Error & { code?: string }) => e.code === 'SLURM_ENV' && /SLURM_JOB_ID is not set/.test(e.message),
  );
  assert.throws(() => slurmAllocation({ SLURM_JOB_ID: '1' }, null), /SLURMD_NODENAME is not set/);
  assert.throws(
    () => slurmAllocation({ ...step, CUDA_VISIBLE_DEVICES: 'GPU-1234' }, null),
    /CUDA_VISIBLE_DEVICES=GPU-1234: "GPU-1234" is not a GPU index/,
  );
});

test("squeue's end: local time without a zone, or none", () => {
  assert.equal(parseSqueueEnd('2026-12-03T15:21:33\n'), new Date(2026, 11, 3, 15, 21, 33).getTime());
  for (const none of ['N/A', 'Unknown', 'NONE', '']) assert.equal(parseSqueueEnd(none), null);
});

test("the node's address: NodeAddr of scontrol show node -o, not NodeHostName's; none when the line has none", () => {
  assert.equal(
    parseNodeAddr(
      'NodeName=gpu07 Arch=x86_64 CoresPerSocket=1 NodeAddr=gpu07.example NodeHostName=gpu07 Port=6818 Version=22.05.8\n',
    ),
    'gpu07.example',
  );
  assert.equal(parseNodeAddr('NodeName=gpu07 NodeHostName=gpu07'), null);
});

test('a rank killed by SIGTERM under Slurm: the attempt was cut by Slurm, said so; outside Slurm only the signal', () => {
  const exit = {
    rank: 0,
    card: 'cpu:0@vm-slurm7',
    pid: 42,
    code: null,
    signal: 'SIGTERM',
    lastError: null,
    fault: null,
  };
  assert.equal(
    describeRankExit(exit, { SLURM_JOB_ID: '7' }),
    "rank 0 on card cpu:0@vm-slurm7 (pid 42) was killed by SIGTERM from Slurm (job 7's step was signalled: scancel, preemption or its time limit; the program reset the SIGTERM the worker had it ignore) — the attempt was cut by Slurm, not by the rank; no error line",
  );
  assert.equal(
    describeRankExit(exit, {}),
    'rank 0 on card cpu:0@vm-slurm7 (pid 42) was killed by SIGTERM; no error line',
  );
  assert.equal(
    describeRankExit({ ...exit, signal: 'SIGSEGV' }, { SLURM_JOB_ID: '7' }),
    'rank 0 on card cpu:0@vm-slurm7 (pid 42) was killed by SIGSEGV; no error line',
  );
});

test("the cards: nvidia-smi's GPUs of the step's indexes; with no GPU, the cpu cards of the GRES indexes", async () => {
  const alloc = slurmAllocation({ ...step, SLURM_STEP_GPUS: '1,3' }, null);
  const gpus = [0, 1, 2, 3].map((i) => ({ index: i, uuid: `GPU-${i}`, name: 'NVIDIA H200' }));
  assert.deepEqual(
    (await slurmCards('h', alloc, {}, gpus)).map((c) => [c.id, c.backend, c.index]),
    [
      ['GPU-1', 'cuda', 1],
      ['GPU-3', 'cuda', 3],
    ],
  );
  assert.deepEqual(
    (await slurmCards('h', alloc, {}, [])).map((c) => [c.id, c.backend]),
    [
      ['cpu:1@h', 'cpu'],
      ['cpu:3@h', 'cpu'],
    ],
  );
  await assert.rejects(
    slurmCards('h', alloc, {}, gpus.slice(0, 2)),
    /SLURM_STEP_GPUS: Slurm gave this step GPU 3, but nvidia-smi lists 0, 1/,
  );
  // a job without GRES: the worker's own discovery
  assert.deepEqual(
    (await slurmCards('h', slurmAllocation(step, null), { cpuCards: 2 }, [])).map((c) => c.id),
    ['cpu:0@h', 'cpu:1@h'],
  );
});

test('the batch script: one srun of the worker per node, credentials by path only, the pre-timeout signal to the batch shell', () => {
  const s = batchScript({
    nodes: 2,
    gpusPerNode: 8,
    time: '2:00:00',
    partition: 'h200',
    account: 'perf',
    dir: '/home/u/.cache/orch/slurm/run-1',
    node: '/usr/bin/node',
    orch: '/opt/orch/bin/orch.mjs',
    prefix: 'orch',
    drainSeconds: 60,
    workerArgs: ['--allow-command'],
  });
  for (const d of [
    '--nodes=2',
    '--ntasks-per-node=1',
    '--gres=gpu:8',
    '--time=2:00:00',
    '--signal=B:USR1@90',
    '--partition=h200',
    '--account=perf',
  ])
    assert.match(s, new RegExp(`^#SBATCH ${d}$`, 'm'));
  assert.match(
    s,
    /^srun --ntasks-per-node=1 --gres=gpu:8 bash -c 'd=\$1; shift; exec "\$@" --redis-url-file "\$d\/redis-url.\$SLURM_PROCID" --secret-file "\$d\/secret.\$SLURM_PROCID" --unlink-credential-files' orch-worker \/home\/u\/.cache\/orch\/slurm\/run-1 \/usr\/bin\/node \/opt\/orch\/bin\/orch.mjs worker --slurm on --stop-file \/home\/u\/.cache\/orch\/slurm\/run-1\/stop --prefix orch --drain-before-end 60 --allow-command &$/m,
  );
  assert.match(s, /^stop=\/home\/u\/.cache\/orch\/slurm\/run-1\/stop\ntrap 'touch "\$stop"' USR1$/m);
});

test("the batch shell's trap touches the stop file of a run directory that needs quoting", () => {
  const dir = mkdtempSync(join(tmpdir(), "orch run 'dir' "));
  try {
    const s = batchScript({
      nodes: 1,
      gpusPerNode: 0,
      time: '1:00',
      dir,
      node: '/usr/bin/node',
      orch: '/opt/orch/bin/orch.mjs',
      prefix: 'orch',
      drainSeconds: 60,
      workerArgs: [],
    });
    // the script's lines up to its srun, then the signal sbatch would send before the end
    const head = s.slice(0, s.indexOf('\nsrun '));
    const r = spawnSync('bash', ['-c', `${head}\nkill -USR1 $$\nsleep 0.2`], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.ok(existsSync(join(dir, 'stop')), `the trap did not write ${join(dir, 'stop')}: ${r.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("sbatch's environment carries none of orch's credentials (sbatch exports it into the job)", () => {
  const env = slurmEnv({
    PATH: '/bin',
    REDIS_URL: 'redis://:pw@h:1',
    ORCH_CLUSTER_SECRET: 's',
    ORCH_SUBMIT_TOKEN: 't',
    ORCH_DB_URL: 'postgres://u:p@h/db',
    ORCH_PREFIX: 'p',
  });
  assert.deepEqual(env, { PATH: '/bin', ORCH_PREFIX: 'p' });
});
