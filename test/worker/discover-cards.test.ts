import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { UserInputError } from '../../jobs/errors.ts';
import { discoverCards, listGpus } from '../../worker/discover-cards.ts';

const gpus = [
  { index: 0, uuid: 'GPU-aaaa', name: 'NVIDIA H200' },
  { index: 1, uuid: 'GPU-bbbb', name: 'NVIDIA H200' },
];

describe('card discovery', () => {
  test('auto: every GPU by UUID; with none, --cpu-cards cpu cards of this host', async () => {
    assert.deepEqual(await discoverCards('h', { cards: 'auto', gpus }), [
      { id: 'GPU-aaaa', host: 'h', backend: 'cuda', index: 0, uuid: 'GPU-aaaa', name: 'NVIDIA H200' },
      { id: 'GPU-bbbb', host: 'h', backend: 'cuda', index: 1, uuid: 'GPU-bbbb', name: 'NVIDIA H200' },
    ]);
    assert.deepEqual(
      (await discoverCards('h', { cards: 'auto', cpuCards: 2, gpus: [] })).map((c) => [c.id, c.backend]),
      [
        ['cpu:0@h', 'cpu'],
        ['cpu:1@h', 'cpu'],
      ],
    );
  });

  test('a list picks GPUs by index or UUID and cpu:N; an unknown or repeated entry is refused', async () => {
    assert.deepEqual(
      (await discoverCards('h', { cards: ['1', 'GPU-aaaa', 'cpu:3'], gpus })).map((c) => c.id),
      ['GPU-bbbb', 'GPU-aaaa', 'cpu:3@h'],
    );
    await assert.rejects(discoverCards('h', { cards: ['7'], gpus }), (e: unknown) => {
      assert.ok(e instanceof UserInputError);
      assert.equal(e.message, '--cards: "7" is not a card of this host (GPUs: 0=GPU-aaaa, 1=GPU-bbbb)');
      return true;
    });
    await assert.rejects(discoverCards('h', { cards: ['0', 'GPU-aaaa'], gpus }), /"GPU-aaaa" is listed twice/);
  });

  test('memory and compute capability ride on the card; a driver without compute_cap still lists its GPUs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'orch-smi-'));
    try {
      // an nvidia-smi older than compute_cap: it refuses the field, as such drivers do, and answers without it
      const smi = join(dir, 'nvidia-smi');
      writeFileSync(
        smi,
        `#!/bin/sh\ncase "$1" in\n  *compute_cap*) echo 'Field "compute_cap" is not a valid field to query.' >&2; exit 2 ;;\n  --query-gpu=index,uuid,memory.total,name) printf '0, GPU-aaaa, 81920, NVIDIA A100-SXM4-80GB\\n1, GPU-bbbb, [N/A], NVIDIA A100\\n' ;;\n  *) exit 3 ;;\nesac\n`,
      );
      chmodSync(smi, 0o755);
      const rows = await listGpus(smi);
      assert.deepEqual(rows, [
        { index: 0, uuid: 'GPU-aaaa', name: 'NVIDIA A100-SXM4-80GB', memory_mib: 81920 },
        { index: 1, uuid: 'GPU-bbbb', name: 'NVIDIA A100' },
      ]);
      const [card] = await discoverCards('h', { cards: ['0'], gpus: [{ ...rows[0]!, compute_capability: '8.0' }] });
      assert.deepEqual(card, {
        id: 'GPU-aaaa',
        host: 'h',
        backend: 'cuda',
        index: 0,
        uuid: 'GPU-aaaa',
        name: 'NVIDIA A100-SXM4-80GB',
        memory_mib: 81920,
        compute_capability: '8.0',
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('no nvidia-smi: no GPUs', async () => {
    assert.deepEqual(await listGpus('/nonexistent/nvidia-smi'), []);
  });
});
