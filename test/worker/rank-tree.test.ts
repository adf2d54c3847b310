/**
 * A user's program never outlives its worker or its block (worker/rank-process.ts,
 * worker/command/tether.ts):
 * - kill -9 of the worker during a resident rank's request: the program and the child it forked
 *   (which used to keep the card's lock) die, and the next attempt takes the card;
 * - a child that keeps stdout open, in the group or escaped from it with setsid: a killed
 *   resident rank, a per-rep deadline and a cancel each end in bounded time, and the child in the
 *   group is gone;
 * - a spec's PATH cannot replace orch's own flock (a per-rep command ran without the card lock).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type CommandWorkloadInput, runCommandRep } from '../../worker/command/run-command-rep.ts';
import { lockUsers } from '../../worker/foreign-processes.ts';
import { processGroupPids } from '../../worker/rank-process.ts';
import { residentJob, startResident } from '../fixtures/resident-rank-host.ts';
import { waitFor } from '../utils/wait-for.ts';

const HOST = fileURLToPath(new URL('../fixtures/resident-rank-host.ts', import.meta.url));
const PROGRAM = `${JSON.stringify(process.execPath)} ${JSON.stringify(fileURLToPath(new URL('../fixtures/ranks/orch-rank.mjs', import.meta.url)))}`;
const dir = () => mkdtempSync(join(tmpdir(), 'orch-tree-'));

/** Alive and not a zombie (an orphan's zombie waits for a reaper that may not reap here). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** pids a test must not leave behind, whatever it asserts */
const leftovers: number[] = [];
after(() => {
  for (const pid of leftovers) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

/** A child that keeps stdout open and sleeps; its pid written to `pidFile` before the command goes on. `setsid`: out of the group. */
const holder = (pidFile: string, setsid: boolean) =>
  `${setsid ? 'setsid ' : ''}sh -c 'echo $$ > ${pidFile}.new && mv ${pidFile}.new ${pidFile}; exec sleep 60' & while [ ! -s ${pidFile} ]; do sleep 0.05; done;`;
const readPid = (f: string) =>
  waitFor(
    `the child's pid in ${f}`,
    () => (existsSync(f) && /^\d+\n/.test(readFileSync(f, 'utf8')) ? Number(readFileSync(f, 'utf8')) : null),
    { timeoutMs: 10_000 },
  );

describe('a program never outlives its worker', () => {
  test('kill -9 of the worker mid-request: the whole tree dies, and the next attempt gets the card', {
    timeout: 20_000,
  }, async () => {
    const d = dir();
    const lock = join(d, 'card.lock');
    const pidFile = join(d, 'child.pid');
    // the program's shell forks a child (it inherits whatever the program is given) and execs the program
    const cmd = `${holder(pidFile, false)} exec ${PROGRAM}`;
    const host = spawn(process.execPath, ['--import', 'tsx', HOST, lock, cmd], {
      env: { ...process.env, FIXTURE_MODE: 'hang' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const first = await new Promise<string>((resolve, reject) => {
      createInterface({ input: host.stdout! }).once('line', resolve);
      host.once('exit', (code) => reject(new Error(`the stand-in worker exited ${code} before its rank said hello`)));
    });
    const pids: number[] = (JSON.parse(first) as { pids: number[] }).pids;
    const child = await readPid(pidFile);
    const tree = [...new Set([...pids, ...processGroupPids(pids[0]!), child])];
    leftovers.push(...tree);
    assert.ok(tree.length >= 2, `the program and its child: ${tree.join(', ')}`);
    assert.ok(tree.every(alive), 'the rank runs');
    host.kill('SIGKILL');
    await waitFor(
      `every process of the rank to die with its worker (${tree.join(', ')})`,
      () => tree.every((p) => !alive(p)),
      { timeoutMs: 5000 },
    );
    // the next attempt of the block: the card is free
    const next = startResident(lock, residentJob(PROGRAM));
    try {
      const hello = await next.ready;
      assert.equal(hello.type, 'hello');
    } finally {
      await next.close(2000);
    }
  });

  test('a killed resident rank whose child escaped with setsid and holds stdout: it ends, and its lock is free', {
    timeout: 20_000,
  }, async () => {
    const d = dir();
    const lock = join(d, 'card.lock');
    const pidFile = join(d, 'child.pid');
    const rank = startResident(lock, residentJob(`${holder(pidFile, true)} exec ${PROGRAM}`));
    await rank.ready;
    const child = await readPid(pidFile);
    leftovers.push(child);
    const t0 = Date.now();
    rank.kill();
    const exit = await Promise.race([rank.exited, new Promise<null>((r) => setTimeout(() => r(null), 8000).unref())]);
    assert.ok(exit !== null, 'the rank ended although an escaped child still holds its stdout');
    assert.ok(Date.now() - t0 < 5000, `ended in ${Date.now() - t0} ms`);
    assert.equal(lockUsers(lock).filter((p) => p.pid === child).length, 0, 'the escaped child does not hold the card');
    const next = startResident(lock, residentJob(PROGRAM));
    try {
      assert.equal((await next.ready).type, 'hello', 'the next attempt takes the card');
    } finally {
      await next.close(2000);
    }
  });

  test('a resident rank that exits while its forked child holds stdout: ended at once, the child killed with its group', {
    timeout: 20_000,
  }, async () => {
    const d = dir();
    const pidFile = join(d, 'child.pid');
    const rank = startResident(join(d, 'card.lock'), residentJob(`${holder(pidFile, false)} exec ${PROGRAM}`));
    await rank.ready;
    const child = await readPid(pidFile);
    leftovers.push(child);
    const t0 = Date.now();
    const exit = await Promise.race([
      rank.close(2000),
      new Promise<null>((r) => setTimeout(() => r(null), 8000).unref()),
    ]);
    assert.ok(exit !== null && exit.code === 0, 'the program ended on its stdin closing');
    // within the close's 2 s grace: the child does not hold the rank until the grace's SIGKILL
    assert.ok(Date.now() - t0 < 1500, `ended in ${Date.now() - t0} ms`);
    await waitFor('the forked child to die with the rank', () => !alive(child), { timeoutMs: 3000 });
  });
});

function perRep(cmd: string, timeout_s: number): CommandWorkloadInput {
  return {
    run: { cmd, timeout_s },
    toggles: {},
    metric_source: { format: 'jsonl', field: 'ms', step_field: 'step' },
    warmup: 0,
    steps: 1,
  };
}
const METRIC = `echo '{"step":0,"ms":1}'; echo '{"step":1,"ms":1}'`;

describe('a per-rep process ends by its deadline, not by its pipe', () => {
  test('a deadline of 1 s with a child that escaped with setsid and holds stdout: COMMAND_TIMEOUT in about 1 s', {
    timeout: 20_000,
  }, async () => {
    const d = dir();
    const pidFile = join(d, 'child.pid');
    const t0 = Date.now();
    const err = await runCommandRep({
      workload: perRep(`${holder(pidFile, true)} sleep 60`, 1),
      arm: { name: 'a', toggles: {} },
      artifactDir: null,
      cardLock: join(d, 'card.lock'),
    }).then(
      () => null,
      (e: Error & { code?: string }) => e,
    );
    leftovers.push(await readPid(pidFile));
    assert.equal(err?.code, 'COMMAND_TIMEOUT');
    assert.ok(Date.now() - t0 < 5000, `the 1 s deadline ended the rep after ${Date.now() - t0} ms`);
  });

  test('a cancel with such a child: the rep ends at once', { timeout: 20_000 }, async () => {
    const d = dir();
    const pidFile = join(d, 'child.pid');
    const abort = new AbortController();
    const running = runCommandRep({
      workload: perRep(`${holder(pidFile, true)} sleep 60`, 60),
      arm: { name: 'a', toggles: {} },
      artifactDir: null,
      cardLock: join(d, 'card.lock'),
      signal: abort.signal,
    }).then(
      () => null,
      (e: Error & { code?: string }) => e,
    );
    leftovers.push(await readPid(pidFile));
    const t0 = Date.now();
    abort.abort(new Error('orch cancel'));
    const err = await running;
    assert.equal(err?.code, 'COMMAND_ABORTED');
    assert.ok(Date.now() - t0 < 4000, `the cancel ended the rep after ${Date.now() - t0} ms`);
  });

  test('a command that exits 0 leaving a child on stdout: measured at once, the child killed', {
    timeout: 20_000,
  }, async () => {
    const d = dir();
    const pidFile = join(d, 'child.pid');
    const t0 = Date.now();
    const r = await runCommandRep({
      workload: perRep(`${holder(pidFile, false)} ${METRIC}`, 30),
      arm: { name: 'a', toggles: {} },
      artifactDir: null,
      cardLock: join(d, 'card.lock'),
    });
    const child = await readPid(pidFile);
    leftovers.push(child);
    assert.deepEqual(r.step_ms, [1]);
    assert.ok(Date.now() - t0 < 5000, `measured after ${Date.now() - t0} ms`);
    await waitFor('the child to die with its rep', () => !alive(child), { timeoutMs: 3000 });
  });
});

describe("a spec's PATH never replaces orch's helpers", () => {
  test('a per-rep command under a spec PATH holding a fake flock still runs under the card lock', {
    timeout: 20_000,
  }, async () => {
    const d = dir();
    const lock = join(d, 'card.lock');
    const marker = join(d, 'fake-flock-ran');
    // a flock that runs its command without any lock, as a spec's PATH could plant
    writeFileSync(
      join(d, 'flock'),
      `#!/bin/sh\ntouch ${marker}\nwhile [ "$1" != /bin/sh ]; do shift; done\nexec "$@"\n`,
    );
    chmodSync(join(d, 'flock'), 0o755);
    const running = runCommandRep({
      workload: {
        ...perRep(`sleep 1; ${METRIC}`, 30),
        run: { cmd: `sleep 1; ${METRIC}`, timeout_s: 30, env: { PATH: `${d}:/usr/bin:/bin` } },
      },
      arm: { name: 'a', toggles: {} },
      artifactDir: null,
      cardLock: lock,
    });
    const holders = await waitFor(
      'the card lock to be held',
      () => (lockUsers(lock).length > 0 ? lockUsers(lock) : null),
      { timeoutMs: 5000 },
    );
    assert.match(holders[0]!.name, /flock -n -o -E 199 /);
    await running;
    assert.equal(existsSync(marker), false, "the spec's flock never ran");
  });
});
