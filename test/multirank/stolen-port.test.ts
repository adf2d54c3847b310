/**
 * MASTER_PORT taken by another process between the worker's bind-probe and rank 0's bind
 * (worker/command/stolen-port.ts), on a real `orch worker` with two cpu cards running
 * test/fixtures/ranks/torch-rendezvous-rank.py (torch.distributed, gloo: rank 0's TCPStore binds
 * MASTER_PORT). The fixture's rank 0 asks before it binds (bind-<port>.asked) and waits for the
 * test's go (bind-<port>.go): the test listens on the port first, so the theft falls between the
 * check and the bind every time, with no race. Taken once, the gang starts again on another port
 * and runs; taken on both, the attempt fails naming both ports.
 * Skipped with its reason without torch in /usr/bin/python3 (the `torch` suite).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { readEvents } from '../utils/events.ts';
import { isAlive } from '../utils/processes.ts';
import { suiteSkip, torchMissing } from '../utils/required-suite.ts';
import { waitFor } from '../utils/wait-for.ts';
import { EXPERIMENT, useCommandGang } from './command-gang-harness.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const FIXTURE = join(ROOT, 'test/fixtures/ranks/torch-rendezvous-rank.py');
const CMD = `/usr/bin/python3 ${JSON.stringify(FIXTURE)}`;
const LIBRARY = { PYTHONPATH: join(ROOT, 'ranklib/python'), PYTHONDONTWRITEBYTECODE: '1' };

/** A stand-in for the process that takes the port: listens on it, and when closed drops its connections (rank 1's, to the wrong store). */
interface Thief {
  close(): Promise<void>;
}

function listen(port: number): Promise<Thief> {
  const connections = new Set<Socket>();
  return new Promise((resolve, reject) => {
    const s = createServer((c) => {
      connections.add(c);
      c.on('error', () => {}).on('close', () => connections.delete(c));
    });
    s.once('error', reject);
    s.listen({ port, exclusive: true }, () =>
      resolve({
        close: () => {
          for (const c of connections) c.destroy();
          return new Promise((r) => s.close(() => r()));
        },
      }),
    );
  });
}

/**
 * Answers rank 0's bind requests in `dir` until `ended()`, in order: the first `steal` ports are
 * taken (listened on, held in `held`) before the go, the others only let go. Returns the ports asked.
 */
async function answerBinds(dir: string, steal: number, held: Thief[], ended: () => boolean): Promise<number[]> {
  const ports: number[] = [];
  for (;;) {
    const asked = await waitFor(
      `rank 0's bind request ${ports.length + 1}, or the block's end`,
      () =>
        ended()
          ? 'ended'
          : (readdirSync(dir)
              .map((f) => /^bind-(\d+)\.asked$/.exec(f))
              .map((m) => (m === null ? null : Number(m[1])))
              .find((p) => p !== null && !ports.includes(p)) ?? null),
      { timeoutMs: 90_000 },
    );
    if (asked === 'ended') return ports;
    ports.push(asked);
    if (held.length < steal) held.push(await listen(asked));
    writeFileSync(join(dir, `bind-${asked}.go`), '');
  }
}

describe("MASTER_PORT taken between the worker's check and rank 0's bind (torch, gloo)", {
  timeout: 300_000,
  skip: suiteSkip('torch', torchMissing()),
}, () => {
  const host = 'rvsteal';
  const gang = useCommandGang('rvsteal', CMD, { host });

  async function run(block: number, steal: number) {
    const dir = mkdtempSync(join(gang.env.dir, 'binds-'));
    const held: Thief[] = [];
    try {
      let ended = false;
      const [ran, ports] = await Promise.all([
        gang.run('port-stolen', block, { extra: { ...LIBRARY, FIXTURE_GO_DIR: dir } }).finally(() => (ended = true)),
        answerBinds(dir, steal, held, () => ended),
      ]);
      return { ...ran, ports };
    } finally {
      await Promise.all(held.map((t) => t.close()));
    }
  }

  test('taken once: the gang starts again on another port, says why, and runs', async () => {
    const { end, seen, ports } = await run(1, 1);
    assert.equal(end.state, 'completed', JSON.stringify(end));
    assert.equal(ports.length, 2, `rank 0 asked to bind ${ports.join(', ')}`);
    const [stolen, second] = ports as [number, number];
    assert.notEqual(second, stolen);
    assert.equal(Number(seen<{ master_port: string }>(0).master_port), second);
    const restarts = (await readEvents(gang.env.redis, gang.prefix(), EXPERIMENT)).filter(
      (e) => e.event.type === 'worker' && e.event.event === 'gang-restart' && e.block === 1,
    );
    assert.equal(restarts.length, 1, JSON.stringify(restarts));
    assert.equal(restarts[0]?.event.port, stolen);
    assert.match(
      String(restarts[0]?.event.reason),
      new RegExp(
        `^rank 0 could not bind MASTER_PORT ${stolen}, taken by another process after this worker checked it \\(rank 0 said: .*${stolen}.*Address already in use.*\\); the gang was started again on another port$`,
      ),
    );
  });

  test('taken again on the second port: the attempt fails naming both ports', async () => {
    const { end, seen, ports } = await run(2, 2);
    assert.equal(end.state, 'failed', JSON.stringify(end));
    assert.equal(ports.length, 2, `rank 0 asked to bind ${ports.join(', ')}`);
    const [first, second] = ports as [number, number];
    const pids = [0, 1].map((r) => seen<{ pid: number }>(r).pid);
    assert.deepEqual(
      pids.filter((pid) => isAlive(pid)),
      [],
      `ranks of the second start (pids ${pids.join(', ')}) still run after the attempt failed`,
    );
    assert.match(
      end.state === 'failed' ? end.reason : '',
      new RegExp(
        `rank 0 could not bind MASTER_PORT ${first}, nor ${second} when the gang was started again: each was taken by another process on host ${host} after this worker checked it free \\(rank 0 said: .*${second}.*Address already in use`,
      ),
    );
  });
});
