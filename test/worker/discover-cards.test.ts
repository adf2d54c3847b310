import assert from 'node:assert/strict';
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

  test('no nvidia-smi: no GPUs', async () => {
    assert.deepEqual(await listGpus('/nonexistent/nvidia-smi'), []);
  });
});
