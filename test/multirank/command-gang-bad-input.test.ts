/**
 * Bad input of a user's program as a gang (issue 39), each on a real `orch worker` with two cpu
 * cards running test/fixtures/ranks/gang-bad-input-rank.py, a program served by orch_rank whose
 * ranks meet on MASTER_ADDR:MASTER_PORT and wait for each other in a "collective" every step:
 * a rank that never says hello, a rank exiting 0 early while the other waits for it, the ranks
 * disagreeing on the step count, and MASTER_PORT's candidates already taken
 * (worker/free-port.ts, ORCH_GANG_PORTS).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { portFree } from '../../worker/free-port.ts';
import { useCommandGang } from './command-gang-harness.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const FIXTURE = join(ROOT, 'test/fixtures/ranks/gang-bad-input-rank.py');
const CMD = `/usr/bin/python3 ${JSON.stringify(FIXTURE)}`;
const LIBRARY = { PYTHONPATH: join(ROOT, 'ranklib/python'), PYTHONDONTWRITEBYTECODE: '1' };

interface Seen {
  pid: number;
  master_port: string;
}

/** Whether `pid` still runs: a zombie waiting for its reaper (a container's init may never reap it) has ended. */
function running(pid: number): boolean {
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) return false;
  // the state is the first field after the command's closing parenthesis
  const state = readFileSync(stat, 'utf8').replace(/^.*\) /s, '')[0];
  return state !== 'Z' && state !== 'X';
}

describe('bad input of a command gang served by orch_rank', () => {
  const host = 'cgbad';
  const { run } = useCommandGang('cmdgang-bad', CMD, { host });
  const reasonOf = (end: { state: string; reason?: string }) => (end.state === 'failed' ? (end.reason ?? '') : '');

  test('the program runs as a gang as it is (the other cases differ from it by one mode)', async () => {
    const { end } = await run('ok', 1, { extra: LIBRARY });
    assert.equal(end.state, 'completed', JSON.stringify(end));
  });

  test('a rank that never says hello: the block fails by the hello deadline, naming the rank that had not', async () => {
    const { end } = await run('no-hello', 2, { helloTimeoutS: 4, extra: LIBRARY });
    assert.equal(end.state, 'failed');
    assert.match(reasonOf(end), /no hello within 4000 ms/);
    assert.match(reasonOf(end), /the gang was starting: rank 0 had said hello, rank 1 had not$/);
  });

  test('a rank exits 0 before answering its rep: the rep fails naming it, and the rank waiting for it in the collective is ended', async () => {
    // a request timeout far beyond the test's wait: only the gang's failure can end rank 0
    const { end, seen } = await run('exit0-early', 3, { timeoutS: 3600, extra: LIBRARY });
    assert.equal(end.state, 'failed');
    assert.match(reasonOf(end), new RegExp(`rank 1 on card cpu:1@${host} \\(pid \\d+\\) exited with code 0`));
    const rank0 = seen<Seen>(0).pid;
    assert.equal(running(rank0), false, `rank 0 (pid ${rank0}) is still running after the gang failed`);
  });

  test('the ranks disagree on the step count: the rep fails naming the rank, its count and the count asked, and the other rank is ended', async () => {
    const { end, seen } = await run('few-steps', 4, { timeoutS: 3600, extra: LIBRARY });
    assert.equal(end.state, 'failed');
    assert.match(
      reasonOf(end),
      new RegExp(
        `rank 1 on card cpu:1@${host} \\(pid \\d+\\) broke the protocol: rep \\S+ has 2 step times; 3 steps were asked`,
      ),
    );
    const rank0 = seen<Seen>(0).pid;
    assert.equal(running(rank0), false, `rank 0 (pid ${rank0}) is still running after the gang failed`);
  });
});

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen({ port, exclusive: true }, () => resolve(s));
  });
}

/** `count` consecutive ports free now, the first of them. */
async function freeRun(count: number): Promise<number> {
  for (let base = 21000; base < 32000; base += count) {
    const free = await Promise.all(Array.from({ length: count }, (_, k) => portFree(base + k)));
    if (free.every(Boolean)) return base;
  }
  throw new Error(`no ${count} consecutive free ports from 21000 to 32000`);
}

describe("MASTER_PORT's candidates already taken", () => {
  const host = 'cgport';
  const held: Server[] = [];
  // ports [base, base + taken] of ORCH_GANG_PORTS, all but the last held by this test
  const taken = 7;
  let base = 0;
  const gang = useCommandGang('cmdgang-port', CMD, {
    host,
    workerEnv: () => ({ ORCH_GANG_PORTS: `${base}-${base + taken}` }),
  });
  before(async () => {
    base = await freeRun(taken + 1);
    for (let k = 0; k < taken; k++) held.push(await listen(base + k));
  });
  after(() => Promise.all(held.map((s) => new Promise((r) => s.close(r)))));

  test('the worker passes over the taken ports to the free one: the gang runs, not fails', async () => {
    for (const block of [1, 2]) {
      const { end, seen } = await run(block);
      assert.equal(end.state, 'completed', JSON.stringify(end));
      assert.equal(Number(seen<Seen>(0).master_port), base + taken);
    }
  });

  function run(block: number) {
    return gang.run('ok', block, { extra: LIBRARY });
  }
});
