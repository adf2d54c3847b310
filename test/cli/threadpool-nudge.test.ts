// bin/threadpool-nudge.mjs: a threadpool request posted while another has waited a whole tick, so a
// wakeup glibc lost (sourceware bug 25847, glibc before 2.41) costs an orch process a second
// instead of its run. The lost wakeup itself cannot be planted; what the nudge does on a tick can.

import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, open, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
// @ts-expect-error: a plain .mjs module of bin/, without declarations
import { startThreadpoolNudge } from '../../bin/threadpool-nudge.mjs';
import { waitFor } from '../utils/wait-for.ts';

/** The nudge over a scripted count of pending requests, one entry per tick; its posts, counted. */
async function run(pendingPerTick: number[]): Promise<number> {
  let tick = 0;
  let posts = 0;
  const stop: () => void = startThreadpoolNudge({
    intervalMs: 5,
    pending: () => pendingPerTick[Math.min(tick++, pendingPerTick.length - 1)],
    post: () => {
      posts++;
    },
  });
  try {
    await waitFor('every scripted tick', () => tick > pendingPerTick.length, { timeoutMs: 5000, intervalMs: 5 });
  } finally {
    stop();
  }
  return posts;
}

describe('the threadpool nudge (bin/threadpool-nudge.mjs)', () => {
  it('posts once a request has been pending for two ticks in a row, and at every tick it stays so', async () => {
    // ticks: 1 1 1 1 → posts at ticks 2, 3, 4 and the repeated last one
    assert.ok((await run([1, 1, 1, 1])) >= 3);
  });

  it('posts nothing while no request waits a whole tick', async () => {
    assert.equal(await run([0, 0, 0, 0]), 0);
    assert.equal(await run([1, 0, 1, 0, 1, 0]), 0);
  });

  it("sees this process's own pending file request by default: an open of a FIFO nobody writes yet", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'orch-nudge-'));
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    let posts = 0;
    const stop: () => void = startThreadpoolNudge({ intervalMs: 10, post: () => posts++ });
    const opened = new Promise<number>((res, rej) => open(fifo, 'r', (err, fd) => (err ? rej(err) : res(fd))));
    try {
      await waitFor('a post while the open waits', () => posts > 0, { timeoutMs: 5000 });
    } finally {
      stop();
      closeSync(openSync(fifo, 'w')); // the writer that ends the open
      closeSync(await opened);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps no process alive: a process with nothing else to do exits at once', () => {
    const started = Date.now();
    const r = spawnSync(
      process.execPath,
      ['--input-type=module', '-e', "(await import('./bin/threadpool-nudge.mjs')).startThreadpoolNudge();"],
      { encoding: 'utf8', timeout: 10_000 },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.ok(Date.now() - started < 5000, 'the interval did not hold the process');
  });

  it("bin/orch.mjs starts it before it loads the CLI (the loader's own file reads are threadpool requests)", () => {
    const entry = readFileSync('bin/orch.mjs', 'utf8');
    const started = entry.indexOf('startThreadpoolNudge();');
    assert.ok(started > 0, 'bin/orch.mjs calls startThreadpoolNudge()');
    assert.ok(started < entry.indexOf('await import('), 'before the first import of the CLI');
  });
});
