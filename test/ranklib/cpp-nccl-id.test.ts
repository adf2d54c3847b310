/**
 * orch_rank.h's NCCL path (ORCH_RANK_NCCL): orch_rank::nccl_unique_id(), which examples/cuda-tp/tp.cu
 * sets its communicator up with. This machine has no NCCL, so test/fixtures/ranks/nccl-id-rank.cpp
 * compiles against NCCL's declarations (test/fixtures/nccl-declarations/nccl.h) and defines
 * ncclGetUniqueId itself (byte i = 7 i mod 256: a NUL first, bytes over 127). Spoken to as the
 * worker speaks to it: rank 0 publishes the id's 128 bytes under the key "nccl-id" before hello;
 * rank 1 publishes nothing and gets whatever 128 bytes the worker answers; an answer of another
 * size fails setup with the sizes named.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { EXCHANGE_LIMITS } from '../../jobs/rank-protocol-constants.ts';
import { RankUnderTest } from '../conformance/rank-under-test.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const workdir = mkdtempSync(join(tmpdir(), 'orch-nccl-id-'));
const BIN = join(workdir, 'nccl-id-rank');
/** NCCL_UNIQUE_ID_BYTES */
const ID_BYTES = 128;
const started: RankUnderTest[] = [];

function start(rank: number): RankUnderTest {
  const r = new RankUnderTest(BIN, [], { ORCH_RANK_PROTOCOL: '1', ORCH_PARAMS: '{}', ORCH_RANK: String(rank) });
  started.push(r);
  return r;
}

/** What the fixture's counters say of the id it got: its size and sum of (i + 1) × byte i. */
function digest(id: Buffer): { id_bytes: number; id_weighted_sum: number } {
  let sum = 0;
  for (let i = 0; i < id.length; i++) sum += (i + 1) * (id[i] ?? 0);
  return { id_bytes: id.length, id_weighted_sum: sum };
}

const answer = (data: Buffer) => ({
  v: 1,
  op: 'exchange',
  key: EXCHANGE_LIMITS.ncclKey,
  data: data.toString('base64'),
});
const rep = { v: 1, id: 'r', op: 'rep', arm: 'r', toggles: {}, warmup: 0, steps: 1, seed: 1 };

before(() => {
  const cc = spawnSync(
    'g++',
    [
      '-std=c++17',
      '-O1',
      '-Wall',
      '-Wextra',
      '-Werror',
      '-DORCH_RANK_NCCL',
      `-I${join(ROOT, 'test', 'fixtures', 'nccl-declarations')}`,
      `-I${join(ROOT, 'ranklib', 'cpp')}`,
      '-o',
      BIN,
      join(ROOT, 'test', 'fixtures', 'ranks', 'nccl-id-rank.cpp'),
    ],
    { encoding: 'utf8' },
  );
  assert.equal(cc.status, 0, `g++ -DORCH_RANK_NCCL: ${cc.stderr}`);
});

after(() => {
  for (const r of started) r.kill();
  rmSync(workdir, { recursive: true, force: true });
});

describe('orch_rank.h nccl_unique_id()', () => {
  test("rank 0 publishes ncclGetUniqueId's 128 bytes, NULs and high bytes intact, and keeps them", async () => {
    const made = Buffer.from(Array.from({ length: ID_BYTES }, (_, i) => (7 * i) & 0xff));
    const r = start(0);
    const published = await r.next();
    assert.equal(published?.type, 'exchange');
    assert.equal(published?.key, EXCHANGE_LIMITS.ncclKey);
    assert.deepEqual(Buffer.from(String(published?.data), 'base64'), made);
    assert.equal((await r.send(answer(made)))?.type, 'hello', r.stderr);
    assert.deepEqual((await r.send(rep))?.counters, digest(made));
    assert.deepEqual(await r.close(), { code: 0, signal: null });
  });

  test("rank 1 publishes nothing and gets rank 0's id from the worker", async () => {
    const rank0s = Buffer.from(Array.from({ length: ID_BYTES }, (_, i) => 255 - i));
    const r = start(1);
    assert.deepEqual(await r.next(), { v: 1, type: 'exchange', key: EXCHANGE_LIMITS.ncclKey, data: null });
    assert.equal((await r.send(answer(rank0s)))?.type, 'hello', r.stderr);
    assert.deepEqual((await r.send(rep))?.counters, digest(rank0s));
    assert.deepEqual(await r.close(), { code: 0, signal: null });
  });

  test('an id of another size fails setup naming both sizes; no hello, exit 1', async () => {
    const r = start(1);
    assert.equal((await r.next())?.type, 'exchange');
    r.write(JSON.stringify(answer(Buffer.alloc(ID_BYTES - 1))));
    assert.equal(await r.next(), null, 'no hello');
    assert.deepEqual(await r.exitWithin(), { code: 1, signal: null });
    assert.match(r.stderr, /nccl_unique_id: exchanged 127 bytes, not 128/);
  });
});
