/**
 * One worker per host name (store/host-claim.ts), real `orch worker` processes on a real Redis: a
 * second worker with the same --host is refused naming the first one's pid and machine, and
 * registers nothing; a clean stop releases the name at once; the claim of a worker killed with -9
 * expires two heartbeats after its last one: a replacement started at once on the same machine
 * waits that long and then serves the name.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { orchKeys } from '../../store/keys.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';
import { spawnWorker, type WorkerProcess } from '../utils/worker-process.ts';

const HEARTBEAT_MS = 500;

describe('one worker per host name', { timeout: 120_000 }, () => {
  const r = privateRedis();
  let dir: string;
  const workers: WorkerProcess[] = [];
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'orch-host-claim-'));
  });
  after(async () => {
    for (const w of workers) w.kill();
    await Promise.all(workers.map((w) => w.exited));
    rmSync(dir, { recursive: true, force: true });
  });
  const worker = async (prefix: string, lock: string, noWait = false, heartbeatMs = HEARTBEAT_MS) => {
    const w = await spawnWorker({
      redisUrl: r.server.url,
      host: 'h1',
      prefix,
      lockDir: join(dir, lock),
      heartbeatMs,
      noWait,
    });
    workers.push(w);
    return w;
  };

  test("a second worker with the same --host is refused with the holder's pid and machine; a clean stop frees the name", async () => {
    const prefix = freshPrefix();
    const first = await worker(prefix, 'a');
    const second = await worker(prefix, 'b', true);
    const refused = await Promise.race([
      second.exited,
      new Promise<'running'>((res) => setTimeout(() => res('running'), 15_000)),
    ]);
    assert.deepEqual(
      refused,
      { code: 2, signal: null },
      `the second worker of h1: ${JSON.stringify(refused)}\n${second.log().slice(-2000)}`,
    );
    assert.match(
      second.log(),
      new RegExp(
        `host name "h1" is already served by the worker pid ${first.child.pid} on ${hostname().replace(/\./g, '\\.')} \\(started \\d{4}-`,
      ),
    );
    assert.match(second.log(), /hint: stop that worker .* or give this one another --host/);
    assert.doesNotMatch(second.log(), /"worker ready"/);
    // the first still holds its host: its registration is its own
    assert.equal(await r.redis.hget(orchKeys(prefix).host('h1'), 'pid'), String(first.child.pid));

    first.child.kill('SIGTERM');
    assert.equal((await first.exited).code, 0, first.log());
    assert.equal(await r.redis.exists(orchKeys(prefix).hostClaim('h1')), 0, 'a clean stop releases the claim');
    const third = await worker(prefix, 'c');
    assert.equal(await r.redis.hget(orchKeys(prefix).hostClaim('h1'), 'pid'), String(third.child.pid));
  });

  test('a worker killed with -9: its replacement, started at once, waits out the claim (two heartbeats) and takes the name', async () => {
    const prefix = freshPrefix();
    // heartbeats long enough that the claim outlives the replacement's start-up (about a second)
    const hb = 2500;
    const first = await worker(prefix, 'd', false, hb);
    // the heartbeat renews it: still held past one TTL
    await new Promise((res) => setTimeout(res, 2 * hb + 500));
    assert.equal(
      await r.redis.hget(orchKeys(prefix).hostClaim('h1'), 'pid'),
      String(first.child.pid),
      'renewed by the heartbeat',
    );
    first.kill();
    await first.exited;
    const next = await worker(prefix, 'e', true, hb);
    const taken = await waitFor(
      'the replacement to take the name',
      async () => (await r.redis.hget(orchKeys(prefix).hostClaim('h1'), 'pid')) === String(next.child.pid),
      { timeoutMs: 15_000 },
    );
    assert.ok(taken);
    assert.match(
      next.log(),
      new RegExp(
        `the worker that held it \\(pid ${first.child.pid}\\) is gone without releasing it; waiting up to ${2 * hb} ms`,
      ),
    );
    await waitFor('the replacement ready', () => next.log().includes('"worker ready"'), { timeoutMs: 15_000 });
  });
});
