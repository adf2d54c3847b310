// The machine record a worker puts on each block-start (worker/machine-record.ts) and the report's
// provenance lines of it (orchestrator/report/render-provenance.ts): the host as node:os sees it;
// a GPU as nvidia-smi answers (here the stand-in test/fixtures/nvidia-smi, with a planted row),
// its `[N/A]` fields "not reported", never a made-up value; nvidia-smi failing is said, not hidden.

import assert from 'node:assert/strict';
import { cpus, release, type } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Provenance } from '../../orchestrator/report/provenance.ts';
import { renderProvenance } from '../../orchestrator/report/render-provenance.ts';
import { GPU_QUERY, readMachineRecord } from '../../worker/machine-record.ts';

const FAKE_SMI = join(process.cwd(), 'test/fixtures/nvidia-smi');
const card = { id: 'GPU-5f1c', host: 'h1', backend: 'cuda' as const, index: 0, uuid: 'GPU-5f1c', name: 'NVIDIA H200' };
const ROW = 'GPU-5f1c, NVIDIA H200, 550.54.15, 700.00, 1980, 2619, 1980, [N/A], Enabled, Default\n';

const provenance = (machines: Provenance['machines']): Provenance => ({
  orch: { version: '0', commit: null },
  spec_hash: 's',
  workload_hash: 'w',
  created: 'c',
  ended: null,
  builds: [],
  graphrt: [],
  hosts: ['h1'],
  cards: [],
  throttle: { reasons: {}, reps: [] },
  machines,
});

test('the host as node:os sees it, a GPU as nvidia-smi answers, [N/A] not reported', async () => {
  assert.equal(GPU_QUERY.length, ROW.split(',').length, 'one field per queried column');
  process.env.FAKE_SMI_GPUS = ROW;
  const m = await readMachineRecord([card], FAKE_SMI);
  delete process.env.FAKE_SMI_GPUS;
  assert.equal(m.os, type());
  assert.equal(m.kernel, release());
  assert.equal(m.cpu_model, cpus()[0]!.model.trim());
  assert.equal(m.node, process.version);
  assert.deepEqual(m.gpus, [
    {
      card: 'GPU-5f1c',
      uuid: 'GPU-5f1c',
      name: 'NVIDIA H200',
      driver: '550.54.15',
      power_limit_w: 700,
      sm_mhz: 1980,
      mem_mhz: 2619,
      max_sm_mhz: 1980,
      applications_sm_mhz: null,
      persistence_mode: 'Enabled',
      compute_mode: 'Default',
    },
  ]);
  assert.equal(m.gpus_unread, null);
  const lines = renderProvenance({ provenance: provenance([{ host: 'h1', ...m }]) });
  const gpu = lines.find((l) => l.startsWith('- GPU h1/GPU-5f1c: '))!;
  assert.equal(
    gpu,
    '- GPU h1/GPU-5f1c: NVIDIA H200, UUID GPU-5f1c, driver 550.54.15, power limit 700 W, SM clock 1980 MHz (max 1980 MHz, application setting not reported), memory clock 2619 MHz, persistence mode Enabled, compute mode Default',
  );
  assert.match(
    lines.find((l) => l.startsWith('- machine h1: '))!,
    new RegExp(`^- machine h1: ${type()} ${release().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(`),
  );
});

test('nvidia-smi failing: no GPU made up, the reason in the record and the report; cpu cards ask nothing', async () => {
  const m = await readMachineRecord([card], join(process.cwd(), 'test/fixtures/no-such-nvidia-smi'));
  assert.deepEqual(m.gpus, []);
  assert.match(m.gpus_unread!, /no-such-nvidia-smi --query-gpu failed: .*ENOENT/);
  assert.match(
    renderProvenance({ provenance: provenance([{ host: 'h1', ...m }]) }).join('\n'),
    /GPUs not reported: .*no-such-nvidia-smi --query-gpu failed/,
  );
  const cpu = await readMachineRecord(
    [{ ...card, id: 'cpu:0@h1', backend: 'cpu', uuid: 'cpu:0@h1' }],
    join(process.cwd(), 'test/fixtures/no-such-nvidia-smi'),
  );
  assert.deepEqual([cpu.gpus, cpu.gpus_unread], [[], null]);
  assert.deepEqual(
    renderProvenance({ provenance: provenance([]) }).filter((l) => l.startsWith('- machine')),
    ['- machine: not reported (no committed block recorded one)'],
  );
});
