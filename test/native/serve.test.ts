/**
 * graphrt serve: one resident process answers 100 requests alternating arms (warm state, the
 * re-capture on a key change, A/A within the process), bad requests are answered and serving
 * goes on, and closing stdin ends the process with exit 0 within a second. --card-lock keeps a
 * second process off the card.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { GraphrtLine } from '../../jobs/graphrt-protocol.ts';
import { only, runGraphrt, ServeProcess, skipWithoutBinary } from './graphrt.ts';

const skip = skipWithoutBinary;

function repOf(answer: GraphrtLine[]) {
  return only(answer, 'rep');
}

test('serve: 100 requests alternating arms in one process, then stdin closed → exit 0 within a second', {
  skip,
}, async () => {
  const serve = new ServeProcess(['--backend', 'cpu']);
  try {
    const hello = await serve.next();
    assert.equal(hello.type, 'hello');
    const arms = {
      eager: { workload: 'decode', toggles: { graph: false }, params: { layers: 2, hidden: 32 }, warmup: 1, steps: 3 },
      graph: {
        workload: 'decode',
        toggles: { graph: true, split_combine: true },
        params: { layers: 2, hidden: 32 },
        warmup: 1,
        steps: 3,
      },
    };
    const hashes: Record<string, string[][]> = { eager: [], graph: [] };
    let captures = 0;
    const graphUse: string[] = [];
    for (let i = 0; i < 100; i++) {
      const arm = i % 2 === 0 ? 'eager' : 'graph';
      const answer = await serve.ask({ id: `r${i}`, arm, ...arms[arm] });
      const rep = repOf(answer);
      assert.equal(rep.id, `r${i}`);
      assert.equal(rep.arm, arm);
      assert.equal(rep.mode, arm);
      for (const line of answer) if ('id' in line) assert.equal(line.id, `r${i}`);
      captures += answer.filter((l) => l.type === 'capture').length;
      if (arm === 'graph') graphUse.push(String((rep as { graph?: unknown }).graph));
      hashes[arm]?.push(rep.hashes);
    }
    // The rank keeps one graph per capture key for its life: the graph arm is captured once,
    // and interleaving the eager arm between its reps never re-captures it.
    assert.equal(captures, 1);
    assert.deepEqual(graphUse, ['fresh', ...Array(49).fill('reused')]);
    for (const h of [...(hashes.eager ?? []), ...(hashes.graph ?? [])])
      assert.deepEqual(h, hashes.eager?.[0], 'A/A and graph = eager');
    const closedAt = Date.now();
    serve.child.stdin.end();
    const exit = await serve.exited;
    assert.equal(exit.code, 0);
    assert.ok(exit.at - closedAt < 1000, `exited ${exit.at - closedAt} ms after stdin closed`);
  } finally {
    serve.child.kill('SIGKILL');
  }
});

test('serve: a bad request is answered with its code and serving goes on', { skip }, async () => {
  const serve = new ServeProcess(['--backend', 'cpu']);
  try {
    await serve.next();
    const cases: { request: unknown; code: string; id?: string }[] = [
      { request: '{"id":"x", "workload":', code: 'BAD_REQUEST' },
      { request: '[1,2,3]', code: 'BAD_REQUEST' },
      { request: { id: 'a', workload: 'nope' }, code: 'UNKNOWN_WORKLOAD', id: 'a' },
      { request: { id: 'b', toggles: { pld: true } }, code: 'UNKNOWN_TOGGLE', id: 'b' },
      { request: { id: 'c', params: { hidden: -8 } }, code: 'BAD_PARAM', id: 'c' },
      { request: { id: 'd', steps: -1 }, code: 'BAD_PARAM', id: 'd' },
      { request: { id: 'e', frobnicate: true }, code: 'BAD_REQUEST', id: 'e' },
      { request: { id: 'f', op: 'dance' }, code: 'BAD_REQUEST', id: 'f' },
      // the probe workload answers only op probe: a rep or a gate of it is the sender's mistake
      { request: { id: 'g', op: 'rep', workload: 'probe' }, code: 'BAD_REQUEST', id: 'g' },
      { request: { id: 'i', op: 'identity', workload: 'probe', replays: 3 }, code: 'BAD_REQUEST', id: 'i' },
    ];
    let stderr = '';
    serve.child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    for (const c of cases) {
      const answer = await serve.ask(c.request);
      const err = only(answer, 'error');
      assert.equal(err.code, c.code, JSON.stringify(c.request));
      assert.equal(err.exit_code, 2);
      assert.equal(err.id, c.id);
      const ok = await serve.ask({ id: 'ok', workload: 'chain', params: { kernels: 4 }, steps: 1 });
      assert.equal(repOf(ok).hashes.length, 1, 'still serving');
    }
    const probes = await serve.ask({
      id: 'p',
      op: 'probe',
      workload: 'probe',
      params: { kernels: 8, params: 2, param_size: 16 },
    });
    assert.deepEqual(
      probes.map((l) => l.type),
      ['probe', 'probe', 'probe', 'probe', 'probe'],
      'op probe: five probe lines',
    );
    const hello = only(await serve.ask({ id: 'h', op: 'hello' }), 'hello');
    assert.equal(hello.id, 'h');
    serve.child.stdin.end();
    assert.equal((await serve.exited).code, 0);
    // a bad request is answered on stdout alone: the final error line goes to stderr only when the process ends
    assert.equal(stderr, '', 'nothing on stderr for answered bad requests');
  } finally {
    serve.child.kill('SIGKILL');
  }
});

test('--card-lock: a second process on a held card gets CARD_BUSY, exit 4; free again once the first exits', {
  skip,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'graphrt-lock-'));
  const lock = join(dir, 'card0.lock');
  const holder = new ServeProcess(['--backend', 'cpu', '--card-lock', lock]);
  try {
    assert.equal((await holder.next()).type, 'hello');
    const second = runGraphrt(['hello', '--backend', 'cpu', '--card-lock', lock]);
    assert.equal(second.code, 4);
    assert.equal(only(second.lines, 'error').code, 'CARD_BUSY');
    holder.child.stdin.end();
    assert.equal((await holder.exited).code, 0);
    assert.equal(runGraphrt(['hello', '--backend', 'cpu', '--card-lock', lock]).code, 0);
  } finally {
    holder.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
