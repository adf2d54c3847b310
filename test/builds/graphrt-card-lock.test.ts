/**
 * The card lock handed over to a rank of several graphrt builds (worker/graphrt-runner.ts): the
 * worker locks one open file description of the card's lock file and passes it to every process
 * of the rank as fd 3 — the checkout's graphrt with `--card-lock-fd 3`, a build of another commit
 * with no flag at all (an older graphrt knows none). Real graphrt processes: two binaries hold the
 * card together, any other process on the card's lock is CARD_BUSY, and the card is free once
 * every process of the rank is gone (closed, or one killed, which ends the rank).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import type { BlockJob } from '../../jobs/block-job.ts';
import type { Card } from '../../jobs/card.ts';
import { BuildCache } from '../../worker/builds/build-cache.ts';
import { checkGraphrtBuildProtocol } from '../../worker/builds/graphrt-build.ts';
import { HostForeignProcessProbe, lockUsers } from '../../worker/foreign-processes.ts';
import { GraphrtRunner } from '../../worker/graphrt-runner.ts';
import type { RankHandle, RankLine } from '../../worker/rank-runner.ts';
import { type RunAs, resolveRunAs } from '../../worker/run-as.ts';
import { blockJob } from '../utils/block-jobs.ts';

const GRAPHRT = fileURLToPath(new URL('../../native/build/graphrt', import.meta.url));
const skip = existsSync(GRAPHRT) || process.env.CI ? false : 'native/build/graphrt is not built';

const dir = mkdtempSync(join(tmpdir(), 'orch-card-lock-'));
/** "graphrt of build old": another binary on disk, started with no lock flag. */
const OLD = join(dir, 'graphrt-old');
if (!skip) copyFileSync(GRAPHRT, OLD);

const card: Card = { id: 'cpu:0@lock', host: 'lock', backend: 'cpu', index: 0, uuid: 'cpu:0@lock', name: 'cpu' };
const commit = 'a'.repeat(40);

function twoBuildJob(): BlockJob {
  return blockJob({
    experiment: 'lock',
    block: 0,
    attempt: 1,
    epoch: 1,
    host: 'lock',
    cards: [card.id],
    arms: [
      { name: 'own', toggles: { graph: true } },
      { name: 'old', toggles: { graph: true }, build: 'old' },
    ],
    sequence: ['own', 'old', 'old', 'own'],
    builds: { repo: dir, builds: { old: { commit, ref: 'old' } } },
  });
}

const holders: ChildProcess[] = [];
after(() => {
  for (const h of holders) {
    try {
      process.kill(-(h.pid as number), 'SIGKILL');
    } catch {
      // gone
    }
  }
});

const runner = new GraphrtRunner(GRAPHRT, { build: async (req) => ({ binary: req.name === 'old' ? OLD : GRAPHRT }) });

function start(
  lockPath: string,
  gang: { rank: number; world: number; card: Card; job: BlockJob; rendezvous?: { address: string } } = {
    rank: 0,
    world: 1,
    card,
    job: twoBuildJob(),
  },
): { h: RankHandle; lines: RankLine[] } {
  const lines: RankLine[] = [];
  const h = runner.start({ ...gang, lockPath, log: pino({ level: 'silent' }), onLine: (l) => lines.push(l) });
  return { h, lines };
}

/** A foreign `graphrt hello --card-lock PATH` (its own open file description): its exit code and last line. */
function foreign(lockPath: string): { code: number | null; line: string } {
  const r = spawnSync(GRAPHRT, ['hello', '--backend', 'cpu', '--card-lock', lockPath], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  return { code: r.status, line: r.stdout.trim().split('\n').pop() ?? '' };
}

const argv = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);

describe('card lock handed to the processes of a rank of two builds', { skip }, () => {
  test('two binaries hold one card together; a foreign process is CARD_BUSY; the card is free once both exit', async () => {
    const lockPath = join(dir, 'card0.lock');
    const { h, lines } = start(lockPath);
    await h.ready;
    const pids = h.pids();
    assert.equal(pids.length, 2, 'one process per build');
    const exes = new Map(pids.map((p) => [readlinkSync(`/proc/${p}/exe`), p]));
    assert.deepEqual([...exes.keys()].sort(), [GRAPHRT, OLD].sort(), "the checkout's graphrt and the build's binary");
    const own = exes.get(GRAPHRT) as number;
    const old = exes.get(OLD) as number;
    assert.deepEqual(
      argv(own).slice(-2),
      ['--card-lock-fd', '3'],
      "the checkout's graphrt takes the lock on the inherited descriptor",
    );
    assert.ok(
      !argv(old).some((a) => a.startsWith('--card-lock')),
      `the build's graphrt gets no lock flag: ${argv(old).join(' ')}`,
    );
    assert.equal(lines.filter((l) => l.type === 'hello').length, 2, 'a hello per process');

    // Interleaved arms, each to its build's process; no process restarts.
    const job = twoBuildJob();
    for (const [i, name] of job.sequence.entries()) {
      const arm = job.arms.find((a) => a.name === name)!;
      const line = await h.request({ id: `r${i}`, op: 'rep', arm }, 30_000);
      assert.equal(line.type, 'rep', JSON.stringify(line));
      assert.equal((line as { arm: string }).arm, name);
    }
    assert.deepEqual(h.pids().sort(), pids.sort(), 'the same two processes served every rep');

    // Held by exactly the rank's processes: the worker closed its own copy of the description.
    const users = lockUsers(lockPath).map((u) => u.pid);
    assert.ok(
      users.length > 0 && users.every((p) => pids.includes(p)),
      `lock users ${users.join(',')} are the rank's ${pids.join(',')}`,
    );
    assert.deepEqual(await new HostForeignProcessProbe().list(card, lockPath, new Set(pids)), [], 'no foreign process');
    const f = foreign(lockPath);
    assert.equal(f.code, 4, f.line);
    assert.equal(JSON.parse(f.line).code, 'CARD_BUSY');
    assert.equal(
      spawnSync('flock', ['-n', lockPath, 'true']).status,
      1,
      'flock(1) of its own description is refused too',
    );

    const exit = await h.close(5000);
    assert.equal(exit.code, 0);
    assert.deepEqual(h.pids(), []);
    assert.equal(foreign(lockPath).code, 0, 'free once every process of the rank exited');
  });

  test('one process of the rank dies: the rank ends with its exit, the other process with it, and the card is free', async () => {
    const lockPath = join(dir, 'card1.lock');
    const { h } = start(lockPath);
    await h.ready;
    const [a, b] = h.pids() as [number, number];
    process.kill(a, 'SIGKILL');
    const exit = await h.exited;
    assert.equal(exit.pid, a);
    assert.equal(exit.signal, 'SIGKILL');
    assert.ok(!existsSync(`/proc/${b}/cmdline`) || argv(b).length === 0, 'the other process is gone');
    assert.equal(foreign(lockPath).code, 0);
  });

  test("a gang of two ranks: each build's processes meet on a rendezvous of their own, and every rep of both arms is answered", async () => {
    const cards: Card[] = [0, 1].map((i) => ({ ...card, id: `cpu:${i}@gang`, index: i, uuid: `cpu:${i}@gang` }));
    const job = { ...twoBuildJob(), cards: cards.map((c) => c.id) };
    const rendezvous = { address: join(mkdtempSync(join(tmpdir(), 'orch-rv-')), 'rv.sock') };
    const ranks = cards.map(
      (c, rank) => start(join(dir, `gang${rank}.lock`), { rank, world: 2, card: c, job, rendezvous }).h,
    );
    await Promise.all(ranks.map((h) => h.ready));
    for (const [i, name] of job.sequence.entries()) {
      const arm = job.arms.find((a) => a.name === name)!;
      const lines = await Promise.all(ranks.map((h) => h.request({ id: `g${i}`, op: 'rep', arm }, 30_000)));
      assert.deepEqual(
        lines.map((l) => [l.type, (l as { arm?: string }).arm, (l as { world?: number }).world]),
        [
          ['rep', name, 2],
          ['rep', name, 2],
        ],
      );
    }
    for (const h of ranks) assert.equal((await h.close(5000)).code, 0);
  });

  test('a card held by another process: the rank is refused CARD_BUSY before any process starts', async () => {
    const lockPath = join(dir, 'card2.lock');
    const holder = spawn('flock', ['-n', lockPath, 'sleep', '60'], { stdio: 'ignore', detached: true });
    holders.push(holder);
    for (let i = 0; i < 100 && lockUsers(lockPath).length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    const { h } = start(lockPath);
    await assert.rejects(
      h.ready,
      (err: Error & { code?: string }) => err.code === 'CARD_BUSY' && /held by another process/.test(err.message),
    );
    assert.deepEqual(h.pids(), []);
    h.kill();
    const exit = await h.exited;
    assert.equal(exit.code, 4);
  });
});

describe("a build's graphrt as the run-as user", {
  skip: skip || (process.getuid?.() !== 0 && 'not root: only root can switch to a second local user'),
}, () => {
  /** The run-as user and graphrt where an artifact lies for it: in a directory it may pass (and write), runnable by it. */
  function builtForUser(): { runAs: RunAs; open: string; built: string } {
    const runAs = resolveRunAs('orch-test-run', { create: true, log: () => {} });
    const open = mkdtempSync(join(tmpdir(), 'orch-built-'));
    chmodSync(open, 0o777);
    const built = join(open, 'graphrt-built');
    copyFileSync(GRAPHRT, built);
    chmodSync(built, 0o755);
    return { runAs, open, built };
  }

  test("the build's process runs as the run-as user, the worker's own graphrt as the worker; a gang of them meets", async () => {
    const { runAs, open, built } = builtForUser();
    // as the worker makes it: the run-as user is its build cache's
    const asUser = new GraphrtRunner(GRAPHRT, {
      cache: new BuildCache({ root: join(open, 'builds'), runAs }),
      build: async (req) => ({ binary: req.name === 'old' ? built : GRAPHRT }),
    });
    const uid = (pid: number) => Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    const cards: Card[] = [0, 1].map((i) => ({ ...card, id: `cpu:${i}@runas`, index: i, uuid: `cpu:${i}@runas` }));
    const job = { ...twoBuildJob(), cards: cards.map((c) => c.id) };
    // the gang's directory as gang-ranks.ts makes it: the worker's own, 0700
    const rendezvous = { address: join(mkdtempSync(join(tmpdir(), 'orch-rv-')), 'rv.sock') };
    const ranks = cards.map((c, rank) =>
      asUser.start({
        rank,
        world: 2,
        card: c,
        job,
        rendezvous,
        lockPath: join(dir, `runas${rank}.lock`),
        log: pino({ level: 'silent' }),
        onLine: () => {},
      }),
    );
    // a failed check must not leave the ranks running: the file would wait for them
    try {
      await Promise.all(ranks.map((h) => h.ready));
      for (const h of ranks) {
        const byExe = new Map(h.pids().map((p) => [readlinkSync(`/proc/${p}/exe`), uid(p)]));
        assert.equal(byExe.get(built), runAs.uid, "the build's graphrt runs as the run-as user");
        assert.equal(byExe.get(realpathSync(GRAPHRT)), 0, "the worker's own graphrt runs as the worker");
      }
      for (const [i, name] of job.sequence.entries()) {
        const arm = job.arms.find((a) => a.name === name)!;
        const lines = await Promise.all(ranks.map((h) => h.request({ id: `u${i}`, op: 'rep', arm }, 30_000)));
        assert.deepEqual(
          lines.map((l) => [l.type, (l as { arm?: string }).arm]),
          [
            ['rep', name],
            ['rep', name],
          ],
        );
      }
      for (const h of ranks) assert.equal((await h.close(5000)).code, 0);
    } finally {
      for (const h of ranks) h.kill();
    }
  });

  test("the build's protocol check runs its graphrt as the run-as user", async () => {
    const { runAs, open, built } = builtForUser();
    const probe = join(open, 'graphrt-probe');
    writeFileSync(probe, `#!/bin/sh\nid -u > ${open}/hello-uid\nexec ${built} "$@"\n`, { mode: 0o755 });
    await checkGraphrtBuildProtocol(probe, { name: 'old', ref: 'old', commit }, runAs);
    assert.equal(readFileSync(join(open, 'hello-uid'), 'utf8').trim(), String(runAs.uid));
  });
});
