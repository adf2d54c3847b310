/**
 * A command whose Redis refuses it or never answers says which, within its timeout, and exits 2:
 * a wrong password is WRONGPASS named as such (not "cannot reach"), a URL without the password a
 * protected Redis needs is NOAUTH (`orch worker` too: it waits for a Redis that is not up yet, never
 * for a password that will not change), and `orch hosts status` on a cluster file whose Redis is down
 * gives up after 10 s naming the address instead of waiting for a reconnect forever.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort, type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { freshPrefix } from '../utils/redis.ts';
import { spawnWorker } from '../utils/worker-process.ts';
import { runOrch, STACK_FRAME } from './run-orch.ts';

describe('Redis refusals reach the user as what they are', { timeout: 120_000 }, () => {
  let server: RedisServerProcess;
  let dir: string;
  before(async () => {
    server = await startRedisServer();
    dir = mkdtempSync(join(tmpdir(), 'orch-redis-refusal-'));
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a wrong password: REDIS_AUTH naming WRONGPASS at once, never "cannot reach"', () => {
    const t0 = Date.now();
    const r = runOrch(['status'], { REDIS_URL: `redis://:not-the-password@127.0.0.1:${server.port}` });
    const took = Date.now() - t0;
    assert.equal(r.status, 2, r.stderr);
    assert.match(
      r.stderr,
      /Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+ refused the password: WRONGPASS invalid username-password pair/,
    );
    assert.match(r.stderr, /check REDIS_URL's password/);
    assert.doesNotMatch(r.stderr, /cannot reach|not-the-password/);
    assert.doesNotMatch(r.stderr, STACK_FRAME);
    assert.ok(took < 8000, `took ${took} ms`);
  });

  it('orch worker with a wrong password exits 2 naming WRONGPASS instead of retrying forever', async () => {
    const w = await spawnWorker({
      redisUrl: `redis://:not-the-password@127.0.0.1:${server.port}`,
      host: 'wp',
      prefix: freshPrefix(),
      lockDir: join(dir, 'locks'),
      noWait: true,
    });
    const end = await Promise.race([
      w.exited,
      new Promise<'running'>((res) => setTimeout(() => res('running'), 15_000)),
    ]);
    w.kill();
    assert.deepEqual(end, { code: 2, signal: null }, w.log().slice(-2000));
    assert.match(w.log(), /refused the password: WRONGPASS/);
  });

  it('no password for a Redis that needs one: REDIS_AUTH naming NOAUTH', () => {
    const r = runOrch(['status'], { REDIS_URL: `redis://127.0.0.1:${server.port}` });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /Redis at redis:\/\/127\.0\.0\.1:\d+ needs a password and the URL gives none: NOAUTH/);
  });

  it("orch hosts status with the cluster's Redis down: a clear error within ~10 s, not a wait forever", async () => {
    const port = await freePort();
    const key = join(dir, 'key');
    writeFileSync(key, 'not a key\n', { mode: 0o600 });
    const file = join(dir, 'cluster.yaml');
    writeFileSync(
      file,
      [
        'kind: cluster',
        `redis: { url: "redis://:pw@127.0.0.1:${port}" }`,
        'hosts:',
        '  - name: h1',
        `    ssh: { host: 127.0.0.1, port: 1, user: nobody, key_file: "${key}" }`,
        `    build_dir: "${join(dir, 'builds')}"`,
        '',
      ].join('\n'),
    );
    const t0 = Date.now();
    const r = runOrch(['hosts', 'status', file], { REDIS_URL: '' }, 30_000);
    const took = Date.now() - t0;
    assert.notEqual(r.status, null, `orch hosts status still running after ${took} ms`);
    assert.equal(r.status, 2, `${r.stdout}\n${r.stderr}`);
    assert.match(
      r.stderr,
      new RegExp(`cannot reach Redis at redis://:\\*\\*\\*@127\\.0\\.0\\.1:${port} within 10 s: .*ECONNREFUSED`),
    );
    assert.match(r.stderr, new RegExp(`check redis\\.url in ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`));
    assert.ok(took < 15_000, `took ${took} ms`);
  });
});
