/**
 * The foreign-process probe on real processes: flock holders of the card's lock (cpu and cuda
 * cards) and, for cuda cards, nvidia-smi's compute apps of the card's UUID (a stand-in nvidia-smi
 * prints the rows here, as there is no GPU); the block's own ranks are never foreign.
 */

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { listGpus } from '../../worker/discover-cards.ts';
import { HostForeignProcessProbe } from '../../worker/foreign-processes.ts';
import { waitFor } from '../utils/wait-for.ts';

const FAKE_SMI = fileURLToPath(new URL('../fixtures/nvidia-smi', import.meta.url));
const gpu = { id: 'GPU-aaaa', host: 'h', backend: 'cuda' as const, index: 0, uuid: 'GPU-aaaa', name: 'NVIDIA H200' };
const cpu = { id: 'cpu:0@h', host: 'h', backend: 'cpu' as const, index: 0, uuid: 'cpu:0@h', name: 'cpu' };

describe('foreign-process probe', () => {
  test('cuda card: compute apps of its UUID that are not ours, named', async () => {
    process.env.FAKE_SMI_APPS = 'GPU-aaaa, 4242, python train.py\\nGPU-bbbb, 5151, other\\nGPU-aaaa, 777, graphrt\\n';
    // as the card query asks: index, uuid, memory.total (MiB), compute_cap, name
    process.env.FAKE_SMI_GPUS = '0, GPU-aaaa, 143771, 9.0, NVIDIA H200\\n1, GPU-bbbb, 143771, 9.0, NVIDIA H200\\n';
    try {
      const probe = new HostForeignProcessProbe(FAKE_SMI);
      assert.deepEqual(await probe.list(gpu, '/nonexistent.lock', new Set([777])), [
        { pid: 4242, name: 'python train.py', via: 'nvidia-smi' },
      ]);
      assert.deepEqual(await listGpus(FAKE_SMI), [
        { index: 0, uuid: 'GPU-aaaa', name: 'NVIDIA H200', memory_mib: 143771, compute_capability: '9.0' },
        { index: 1, uuid: 'GPU-bbbb', name: 'NVIDIA H200', memory_mib: 143771, compute_capability: '9.0' },
      ]);
    } finally {
      delete process.env.FAKE_SMI_APPS;
      delete process.env.FAKE_SMI_GPUS;
    }
  });

  test("cuda card in a container: nvidia-smi's pids are the host's, compared by count", async () => {
    // pids no process here has: the driver's view from outside this PID namespace
    const alien = (n: number) => `GPU-aaaa, ${4_194_400 + n}, python rank.py`;
    const probe = new HostForeignProcessProbe(FAKE_SMI);
    const ours = new Set([process.pid]);
    try {
      process.env.FAKE_SMI_APPS = `${alien(1)}\\n`;
      assert.deepEqual(
        await probe.list(gpu, '/nonexistent.lock', ours),
        [],
        'one process for one rank: ours, under the host pid',
      );
      assert.equal(
        (await probe.list(gpu, '/nonexistent.lock', new Set())).length,
        1,
        'before the ranks start, any process is foreign',
      );
      process.env.FAKE_SMI_APPS = `${alien(1)}\\n${alien(2)}\\n`;
      const two = await probe.list(gpu, '/nonexistent.lock', ours);
      assert.equal(two.length, 2);
      assert.match(
        two[0]!.name,
        /^python rank\.py; 2 processes on the card for 1 rank; nvidia-smi's pids are of another PID namespace \(a container\), so compared by count$/,
      );
    } finally {
      delete process.env.FAKE_SMI_APPS;
    }
  });

  test('cpu card: the holder of its flock, unless it is ours', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'orch-probe-'));
    const lock = join(dir, 'cpu_0@h.lock');
    const h = spawn('flock', ['-n', lock, 'sleep', '30'], { stdio: 'ignore', detached: true });
    try {
      await waitFor('the lock to be held', () => spawnSync('flock', ['-n', lock, 'true']).status === 1, {
        timeoutMs: 5000,
      });
      const probe = new HostForeignProcessProbe(FAKE_SMI);
      assert.deepEqual(await probe.list(cpu, lock, new Set()), [
        { pid: h.pid, name: `flock -n ${lock} sleep 30`, via: 'card-lock' },
      ]);
      assert.deepEqual(await probe.list(cpu, lock, new Set([h.pid as number])), []);
      assert.deepEqual(await probe.list(cpu, join(dir, 'free.lock'), new Set()), []);
    } finally {
      process.kill(-(h.pid as number), 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
