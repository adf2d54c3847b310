// The embedded default (no REDIS_URL) under signals, as a real `orch submit` in a process group
// of its own, signalled the way a terminal's Ctrl-C is (the whole group): the private
// redis-server is not in that group, so the cancel still reaches it and the run exits 130 with
// its results; a second signal exits at once; a private Redis killed from outside ends the run
// with an error naming it instead of "redis unreachable; retrying" forever; and an orch killed
// with -9 still takes its redis-server with it.

import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { waitFor } from '../utils/wait-for.ts';
import { isAlive as alive, FIXTURE_RANK } from './orch-cluster.ts';

const ORCH = 'bin/orch.mjs';
const EXIT_WITHIN_MS = 20_000;

interface Run {
  pid: number;
  out(): string;
  /** the exit, or 'running' when it has not come within `ms` (then the group is killed) */
  exitWithin(ms: number): Promise<{ code: number | null; signal: NodeJS.Signals | null } | 'running'>;
  redisPid: number;
  dir: string;
}

/** `orch submit` of a 12-rep spec whose reps take 3 s, as the leader of its own process group; resolves once two ranks run. */
async function submit(): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'orch-embedded-sig-'));
  const log = join(dir, 'ranks.jsonl');
  const child = spawn(
    process.execPath,
    [ORCH, 'submit', 'test/fixtures/specs/tiny-ab.yaml', '--results', join(dir, 'results')],
    {
      env: {
        ...process.env,
        REDIS_URL: '',
        ORCH_PREFIX: '',
        // info: a run that does not start says where it stopped (a dozen lines a run)
        ORCH_LOG: 'info',
        ORCH_GRAPHRT: FIXTURE_RANK,
        ORCH_CPU_CARDS: '2',
        FIXTURE_LOG: log,
        FIXTURE_REP_MS: '3000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once('exit', (code, signal) => r({ code, signal })),
  );
  const pid = child.pid!;
  try {
    const started = waitFor(
      'two ranks running',
      () => existsSync(log) && readFileSync(log, 'utf8').trim().split('\n').length >= 2,
      { timeoutMs: 60_000, intervalMs: 50 },
    ).then(() => null);
    started.catch(() => {}); // awaited below unless the exit comes first: then its timeout is nobody's failure
    const early = await Promise.race([started, exited]);
    if (early !== null)
      throw new Error(`orch submit exited (code ${early.code}, signal ${early.signal}) before two ranks ran`);
  } catch (err) {
    // a run that never started its ranks is ended here, not left to a later test, and says why
    const tree = execFileSync('ps', ['-e', '-o', 'pid=,pgid=,args='], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.trim().split(/\s+/)[1] === String(pid))
      .join('\n');
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
    throw new Error(`${(err as Error).message}; orch submit said:\n${out.slice(-8000)}\nits group:\n${tree}`);
  }
  const tree = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(pid)], { encoding: 'utf8' });
  const redisPid = Number(
    tree
      .split('\n')
      .find((l) => l.includes('redis-server'))
      ?.trim()
      .split(/\s+/)[0],
  );
  assert.ok(redisPid > 0, `no redis-server child in:\n${tree}`);
  return {
    pid,
    out: () => out,
    redisPid,
    dir,
    async exitWithin(ms) {
      const r = await Promise.race([exited, new Promise<'running'>((res) => setTimeout(() => res('running'), ms))]);
      if (r === 'running') {
        for (const p of [-pid, redisPid])
          try {
            process.kill(p, 'SIGKILL');
          } catch {
            /* gone */
          }
      }
      return r;
    },
  };
}

test('embedded: Ctrl-C to the process group cancels through the private Redis and exits 130 with the results', async () => {
  const run = await submit();
  try {
    const t0 = Date.now();
    process.kill(-run.pid, 'SIGINT');
    const end = await run.exitWithin(EXIT_WITHIN_MS);
    const took = Date.now() - t0;
    assert.deepEqual(
      end,
      { code: 130, signal: null },
      `${took} ms after SIGINT to the group:\n${run.out().slice(-3000)}`,
    );
    assert.doesNotMatch(run.out(), /redis unreachable/);
    const [id] = readdirSync(join(run.dir, 'results'));
    const summary = JSON.parse(readFileSync(join(run.dir, 'results', id!, 'summary.json'), 'utf8')) as {
      state: string;
      accounting: { planned: number; unaccounted: string[] };
    };
    assert.equal(summary.state, 'cancelled');
    assert.deepEqual(summary.accounting.unaccounted, []);
    assert.ok(!alive(run.redisPid), 'redis-server stopped once orch was done with it');
  } finally {
    rmSync(run.dir, { recursive: true, force: true });
  }
});

for (const second of ['SIGINT', 'SIGTERM'] as const) {
  test(`embedded: a second signal (${second}) after Ctrl-C exits at once`, async () => {
    const run = await submit();
    try {
      process.kill(-run.pid, 'SIGINT');
      await waitFor('the first SIGINT noted', () => /SIGINT: cancelling/.test(run.out()), { timeoutMs: 5000 });
      const t0 = Date.now();
      process.kill(run.pid, second);
      const end = await run.exitWithin(EXIT_WITHIN_MS);
      const took = Date.now() - t0;
      assert.deepEqual(
        end,
        { code: second === 'SIGINT' ? 130 : 143, signal: null },
        `${took} ms after the second signal:\n${run.out().slice(-3000)}`,
      );
      assert.ok(took < 3000, `exited ${took} ms after the second signal`);
      assert.match(run.out(), new RegExp(`${second} again: exiting now`));
      await waitFor('the private redis-server gone with orch', () => !alive(run.redisPid), { timeoutMs: 5000 });
    } finally {
      rmSync(run.dir, { recursive: true, force: true });
    }
  });
}

test('embedded: the private redis-server killed from outside ends the run with an error naming it', async () => {
  const run = await submit();
  try {
    const t0 = Date.now();
    process.kill(run.redisPid, 'SIGKILL');
    const end = await run.exitWithin(EXIT_WITHIN_MS);
    const took = Date.now() - t0;
    assert.deepEqual(
      end,
      { code: 1, signal: null },
      `${took} ms after kill -9 of redis-server:\n${run.out().slice(-3000)}`,
    );
    assert.match(
      run.out(),
      new RegExp(`the private redis-server \\(pid ${run.redisPid}\\) exited \\(SIGKILL\\) while \\S+ ran`),
    );
    assert.ok(took < 10_000, `gave up ${took} ms after the kill`);
  } finally {
    rmSync(run.dir, { recursive: true, force: true });
  }
});

test("embedded: kill -9 of orch's process group still takes the private redis-server down (its parent-death signal)", async () => {
  const run = await submit();
  try {
    process.kill(-run.pid, 'SIGKILL');
    await run.exitWithin(5000);
    await waitFor('redis-server gone with its orch', () => !alive(run.redisPid), { timeoutMs: 5000 });
  } finally {
    rmSync(run.dir, { recursive: true, force: true });
  }
});
