/**
 * exchange() inside a request, on a real `orch worker` with two cpu cards: a 2-rank resident
 * command gang whose program sets its communicator up lazily, in its first step
 * (test/fixtures/ranks/lazy-exchange-rank.py through orch_rank.py, lazy-exchange-rank.cpp through
 * orch_rank.h). The block's three reps go through the worker's one-deep pipeline, so rep 2's
 * request is on the rank's stdin before rep 1's exchange is answered: the library holds it and
 * serves it after (ranklib/PROTOCOL.md "Exchange"). Before that, the exchange read rep 2's request
 * as its answer and failed rep 1, on every rank, in every block of two or more reps.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { useCommandGang } from './command-gang-harness.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const FIXTURES = join(ROOT, 'test/fixtures/ranks');
const LIBRARY = { PYTHONPATH: join(ROOT, 'ranklib/python'), PYTHONDONTWRITEBYTECODE: '1' };
const workdir = mkdtempSync(join(tmpdir(), 'orch-lazy-exchange-'));
const CPP_BIN = join(workdir, 'lazy-exchange-rank');
const SECRET = Buffer.from("rank 0's secret").toString('hex');

before(() => {
  const cc = spawnSync(
    'g++',
    ['-std=c++17', '-O1', `-I${join(ROOT, 'ranklib/cpp')}`, '-o', CPP_BIN, join(FIXTURES, 'lazy-exchange-rank.cpp')],
    { encoding: 'utf8' },
  );
  assert.equal(cc.status, 0, `g++: ${cc.stderr}`);
});
after(() => rmSync(workdir, { recursive: true, force: true }));

const PROGRAMS = [
  { library: 'orch_rank.py', cmd: `/usr/bin/python3 ${JSON.stringify(join(FIXTURES, 'lazy-exchange-rank.py'))}` },
  { library: 'orch_rank.h', cmd: JSON.stringify(CPP_BIN) },
];

for (const [k, program] of PROGRAMS.entries()) {
  describe(`a gang through ${program.library} exchanging inside its first rep`, () => {
    const { run } = useCommandGang(`lazy-xchg-${k}`, program.cmd, { host: `lazyx${k}` });

    test('every rep of the block is answered and every rank got rank 0 bytes', async () => {
      const { end, seen } = await run('ok', 1, { extra: LIBRARY });
      assert.equal(end.state, 'completed', JSON.stringify(end));
      for (const rank of [0, 1]) assert.equal(seen<{ exchanged: string }>(rank).exchanged, SECRET, `rank ${rank}`);
    });
  });
}
