/**
 * The rank protocol class (worker/rank-protocol.ts) against a real fixture rank process
 * (test/fixtures/ranks/rank.mjs, spoken to in graphrt's dialect): a repeated final line never
 * answers the next request (a fault, RANK_PROTOCOL); a request not answered in time fails with
 * RANK_TIMEOUT (transient: retried); an error line followed by its exit fails the request with the
 * exit's code and the line's `CODE: message`, one without an exit answers the request with the
 * line (its code kept) and serving goes on; a rank that dies mid-request fails it with
 * RANK_EXITED (a deterministic exit code) or RANK_DIED (a signal).
 */
import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import type { Card } from '../../jobs/card.ts';
import { kindOf } from '../../jobs/error-codes.ts';
import type { GraphrtLine } from '../../jobs/graphrt-protocol.ts';
import { GraphrtRunner, graphrtLines } from '../../worker/graphrt-runner.ts';
import { RankProtocol, RankTimeoutError } from '../../worker/rank-protocol.ts';
import { armOf, RankExitError, type RankOp, RankProtocolError } from '../../worker/rank-runner.ts';
import { blockJob } from '../utils/block-jobs.ts';
import { FIXTURE_RANK } from '../utils/worker-process.ts';

const RANK = fileURLToPath(new URL('../fixtures/ranks/rank.mjs', import.meta.url));
const card: Card = { id: 'cpu:0@rp', host: 'rp', backend: 'cpu', index: 0, uuid: 'cpu:0@rp', name: 'cpu' };
const job = blockJob({ experiment: 'rp', block: 0, attempt: 1, epoch: 1, host: 'rp', cards: [card.id] });
const rep = (i: number, arm = 'A'): RankOp => ({ id: `r${i}`, op: 'rep', arm: armOf(job, arm) });

/** The fixture rank as its own process group, misbehaving as `env` asks; every line it reports kept. */
function start(env: Record<string, string>): {
  p: RankProtocol<GraphrtLine>;
  lines: GraphrtLine[];
  child: ChildProcessWithoutNullStreams;
} {
  const child = spawn(process.execPath, [RANK, '--rank', '0'], {
    detached: true,
    stdio: 'pipe',
    env: { PATH: process.env.PATH ?? '', ...env },
  });
  const lines: GraphrtLine[] = [];
  const p = new RankProtocol(child, graphrtLines(job), {
    rank: 0,
    card,
    log: pino({ level: 'silent' }),
    onLine: (l) => lines.push(l),
    program: 'rank.mjs',
  });
  return { p, lines, child };
}

describe('RankProtocol with a fixture rank', () => {
  test('a repeated final line does not answer the next request: a fault, the rank killed', async () => {
    const { p } = start({ FIXTURE_BAD: '0:1:repeat-final' });
    await p.ready;
    assert.equal(p.state, 'serving');
    const first = await p.request(rep(0), 10_000);
    assert.deepEqual([first.type, first.id], ['rep', 'r0']);
    const err = await p.request(rep(1, 'B'), 10_000).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof RankProtocolError, String(err));
    assert.equal(err.code, 'RANK_PROTOCOL');
    assert.match(err.message, /broke the protocol: a "rep" line of id r0, arm A with request r1 \(arm B\) in flight: /);
    const exit = await p.exited;
    assert.equal(p.state, 'exited');
    assert.equal(exit.signal, 'SIGKILL', 'the worker killed it');
    assert.match(exit.fault ?? '', /id r0, arm A with request r1/);
    const after = await p.request(rep(2), 10_000).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(after instanceof RankExitError && after.code === 'RANK_PROTOCOL', 'a faulted rank answers nothing more');
  });

  test('a request not answered in time: RANK_TIMEOUT (transient), and the one behind it with it', async () => {
    const { p } = start({ FIXTURE_HANG: '0:1' });
    try {
      await p.ready;
      const first = p.request(rep(0), 100).then(
        () => null,
        (e: unknown) => e,
      );
      const behind = p.request(rep(1), 30_000).then(
        () => null,
        (e: unknown) => e,
      );
      const [a, b] = await Promise.all([first, behind]);
      for (const e of [a, b]) {
        assert.ok(e instanceof RankTimeoutError, String(e));
        assert.equal(e.code, 'RANK_TIMEOUT');
        assert.equal(kindOf(e), 'transient');
      }
      assert.equal((a as Error).message, 'rank 0 on card cpu:0@rp did not answer rep r0 (arm A) within 100 ms');
      assert.equal(
        (b as Error).message,
        'rank 0 on card cpu:0@rp: rep r1 not answered: r0, written before it, timed out',
      );
    } finally {
      p.kill();
      await p.exited;
    }
  });

  test('an error line and its exit: the exit code picks RANK_EXITED, the line is the last error', async () => {
    const { p, lines } = start({ FIXTURE_FAIL: '0:1:1' });
    await p.ready;
    const err = await p.request(rep(0), 10_000).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof RankExitError, String(err));
    assert.equal(err.code, 'RANK_EXITED');
    assert.equal(kindOf(err), 'deterministic');
    assert.equal(err.exit.code, 1);
    assert.equal(err.exit.lastError, 'INTERNAL: fixture rank 0 failing at request 1');
    assert.match(
      err.message,
      /exited with code 1, signal none; last error: INTERNAL: fixture rank 0 failing at request 1$/,
    );
    assert.deepEqual(
      lines.map((l) => l.type),
      ['hello', 'error'],
      'the error line reached the stream',
    );
  });

  test('an error line without an exit answers its request with the line and its code; serving goes on', async () => {
    // a rank that answers every request with BAD_PARAM and serves on (graphrt's answer to a bad request)
    const script = `
      const out = (o) => process.stdout.write(JSON.stringify({ v: 1, ...o }) + '\\n');
      out({ type: 'hello', backend: 'cpu', device: 'e', sm: null, sms: 1, driver: 'e', features: { graph: true, pdl: false, overlap: false, collectives: false }, version: 'e', pid: process.pid, world: 1, rank: 0, final: true });
      require('node:readline').createInterface({ input: process.stdin }).on('line', (l) => out({ type: 'error', id: JSON.parse(l).id, code: 'BAD_PARAM', message: 'kernels too few', exit_code: 2, final: true }));`;
    const child = spawn(process.execPath, ['-e', script], { detached: true, stdio: 'pipe' });
    const p = new RankProtocol(child, graphrtLines(job), {
      rank: 0,
      card,
      log: pino({ level: 'silent' }),
      onLine: () => {},
      program: 'node',
      errorExitWaitMs: 50,
    });
    try {
      await p.ready;
      const [a, b] = await Promise.all([p.request(rep(0), 10_000), p.request(rep(1), 10_000)]);
      assert.deepEqual(
        [a, b].map((l) => (l.type === 'error' ? [l.id, l.code, l.message] : l.type)),
        [
          ['r0', 'BAD_PARAM', 'kernels too few'],
          ['r1', 'BAD_PARAM', 'kernels too few'],
        ],
      );
      assert.equal(p.state, 'serving');
      assert.equal(p.pids().length, 1, 'the rank serves on');
    } finally {
      await p.close(2_000);
    }
  });

  test('a rank that dies mid-request: RANK_DIED (a signal)', async () => {
    const { p, child } = start({ FIXTURE_HANG: '0:1' });
    await p.ready;
    const pending = p.request(rep(0), 30_000).then(
      () => null,
      (e: unknown) => e,
    );
    process.kill(child.pid as number, 'SIGKILL');
    const err = await pending;
    assert.ok(err instanceof RankExitError, String(err));
    assert.equal(err.code, 'RANK_DIED');
    assert.equal(kindOf(err), 'transient');
    assert.equal(err.exit.signal, 'SIGKILL');
  });

  test('a line before hello that is not hello: a fault that rejects ready', async () => {
    const child = spawn(
      'sh',
      ['-c', 'echo \'{"v":1,"type":"probe","id":"x","name":"launch_counter","pass":true,"detail":{}}\'; sleep 30'],
      { detached: true, stdio: 'pipe' },
    );
    const p = new RankProtocol(child, graphrtLines(job), {
      rank: 0,
      card,
      log: pino({ level: 'silent' }),
      onLine: () => {},
      program: 'sh',
    });
    await assert.rejects(
      p.ready,
      (e: unknown) => e instanceof RankProtocolError && /a "probe" line before hello/.test(e.message),
    );
    assert.equal((await p.exited).signal, 'SIGKILL');
  });

  test('through GraphrtRunner: a rank that does not answer in time fails the request with RANK_TIMEOUT', async () => {
    const saved = { env: process.env.ORCH_RANK_ENV, hang: process.env.FIXTURE_HANG };
    process.env.ORCH_RANK_ENV = 'FIXTURE_*';
    process.env.FIXTURE_HANG = '0:1';
    const dir = mkdtempSync(join(tmpdir(), 'orch-rank-protocol-'));
    const h = new GraphrtRunner(FIXTURE_RANK).start({
      job,
      rank: 0,
      world: 1,
      card,
      lockPath: join(dir, 'card.lock'),
      log: pino({ level: 'silent' }),
      onLine: () => {},
    });
    try {
      await h.ready;
      const err = await h.request(rep(0), 100).then(
        () => null,
        (e: unknown) => e,
      );
      assert.equal(kindOf(err), 'transient', `a timeout carries a registered code: ${String(err)}`);
      assert.equal((err as { code?: string }).code, 'RANK_TIMEOUT');
    } finally {
      h.kill();
      await h.exited;
      rmSync(dir, { recursive: true, force: true });
      for (const [k, v] of [
        ['ORCH_RANK_ENV', saved.env],
        ['FIXTURE_HANG', saved.hang],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});
