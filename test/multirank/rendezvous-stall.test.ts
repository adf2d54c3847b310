/**
 * The TCP rendezvous against a peer that connects and stalls (native/PROTOCOL.md "Multi-rank"):
 * a raw socket to rank 0 that sends 1 byte, or a whole 24-byte hello header without its secret,
 * and then nothing. Rank 0 must keep its deadline (RANK_LOST, not a hang), drop the stalled
 * connection, and meanwhile let the honest rank in: the hellos are read side by side.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ServeProcess, skipWithoutBinary } from '../native/graphrt.ts';
import { waitFor } from '../utils/wait-for.ts';

const SECRET = 'stall-test-secret';

/** Rank 0 of 2 on an ephemeral loopback port; resolves once it has published the address. */
async function rankZero(
  dir: string,
  timeoutMs: number,
): Promise<{ rank: ServeProcess; port: number; startedAt: number; stderr: () => string }> {
  const publish = join(dir, 'addr');
  const startedAt = Date.now();
  const rank = new ServeProcess(
    [
      '--backend',
      'cpu',
      '--world',
      '2',
      '--rank',
      '0',
      '--rendezvous',
      'tcp://127.0.0.1:0',
      '--rendezvous-publish',
      publish,
      '--rendezvous-timeout-ms',
      String(timeoutMs),
    ],
    { ...process.env, GRAPHRT_RENDEZVOUS_SECRET: SECRET },
  );
  let err = '';
  rank.child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const addr = await waitFor(
    'rank 0 publishes its address',
    () => {
      try {
        return readFileSync(publish, 'utf8').trim() || null;
      } catch {
        return null;
      }
    },
    { timeoutMs: 10_000 },
  );
  return { rank, port: Number(addr.split(':').pop()), startedAt, stderr: () => err };
}

/** A connection that sends `bytes` and then holds the socket open without a word more. */
async function stall(port: number, bytes: Buffer): Promise<Socket> {
  const s = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => s.once('connect', resolve).once('error', reject));
  s.on('error', () => {});
  s.write(bytes);
  return s;
}

/** The 24-byte hello header (magic "GRRV", op hello, world 2, rank 1) with no secret after it. */
function helloHeader(): Buffer {
  const b = Buffer.alloc(24);
  b.writeUInt32LE(0x56524752, 0);
  b.writeUInt32LE(1, 4);
  b.writeBigUInt64LE(2n, 8);
  b.writeBigUInt64LE(1n, 16);
  return b;
}

/** Exit of `p` within `ms`, else null (and the process killed, so a hang fails instead of hanging). */
async function exitWithin(p: ServeProcess, ms: number): Promise<{ code: number | null; at: number } | null> {
  const t = new Promise<null>((resolve) => setTimeout(() => resolve(null), ms));
  const r = await Promise.race([p.exited, t]);
  if (r === null) p.child.kill('SIGKILL');
  return r;
}

describe('graphrt rendezvous: a peer that stalls mid-hello', { skip: skipWithoutBinary }, () => {
  for (const [what, bytes] of [
    ['1 byte', Buffer.from([0x52])],
    ['a 24-byte header', helloHeader()],
  ] as const) {
    test(`${what} and then silence: rank 0 gives up at its 2 s deadline (RANK_LOST), not later`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'orch-rv-stall-'));
      let sock: Socket | undefined;
      try {
        const r0 = await rankZero(dir, 2000);
        sock = await stall(r0.port, bytes);
        const exit = await exitWithin(r0.rank, 6000);
        assert.ok(exit, `rank 0 still waiting 6 s into a 2 s rendezvous (stderr: ${r0.stderr()})`);
        assert.equal(exit.code, 7, r0.stderr());
        const took = exit.at - r0.startedAt;
        assert.ok(took < 2000 + 1500, `rank 0 gave up after ${took} ms (deadline 2000 ms)`);
        assert.match(r0.stderr(), /rank\(s\) 1 did not reach the rendezvous/);
        assert.match(
          r0.stderr(),
          /refused a rendezvous connection from 127\.0\.0\.1:\d+: stalled: \d+ of 88 hello bytes/,
        );
      } finally {
        sock?.destroy();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  test('a stalled connection holds up nobody: the honest rank 1 joins at once, the gang says hello', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'orch-rv-stall-'));
    let sock: Socket | undefined;
    let r1: ServeProcess | undefined;
    try {
      const r0 = await rankZero(dir, 20_000);
      sock = await stall(r0.port, helloHeader());
      const joinedAt = Date.now();
      r1 = new ServeProcess(
        [
          '--backend',
          'cpu',
          '--world',
          '2',
          '--rank',
          '1',
          '--rendezvous',
          `tcp://127.0.0.1:${r0.port}`,
          '--rendezvous-timeout-ms',
          '20000',
        ],
        { ...process.env, GRAPHRT_RENDEZVOUS_SECRET: SECRET },
      );
      const [h0, h1] = await Promise.all([r0.rank.next(4000), r1.next(4000)]);
      assert.deepEqual([h0.type, h1.type], ['hello', 'hello'], r0.stderr());
      assert.ok(Date.now() - joinedAt < 4000);
      r0.rank.child.kill('SIGKILL');
    } finally {
      sock?.destroy();
      r1?.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
