/**
 * Whoever can write to orch's Redis runs commands as the worker's user, so: the embedded
 * redis-server has a random password (and it is not in its argv); `orch worker` and `orch serve`
 * refuse a Redis that answers without one unless --insecure-redis (then warn); a URL with a
 * password is refused in argv and read from a 0600 --redis-url-file instead.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { spawnOrch } from '../orchestrator/orch-cluster.ts';
import { freshPrefix } from '../utils/redis.ts';
import { spawnWorker, type WorkerProcess } from '../utils/worker-process.ts';

const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');

describe('Redis authentication', { timeout: 120_000 }, () => {
  let secured: RedisServerProcess;
  let open: RedisServerProcess;
  let dir: string;
  const workers: WorkerProcess[] = [];
  before(async () => {
    secured = await startRedisServer();
    open = await startRedisServer({ password: null });
    dir = mkdtempSync(join(tmpdir(), 'orch-auth-'));
  });
  after(async () => {
    for (const w of workers) w.kill();
    await Promise.all(workers.map((w) => w.exited));
    await secured.stop();
    await open.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the embedded redis-server refuses a client without its password, and its argv holds none', async () => {
    // a bare socket: what a local user scanning loopback ports would send
    const reply = await new Promise<string>((resolve, reject) => {
      const s = connect({ host: '127.0.0.1', port: secured.port }, () =>
        s.write('*3\r\n$3\r\nSET\r\n$13\r\norch:injected\r\n$1\r\nx\r\n'),
      );
      s.on('data', (d: Buffer) => {
        s.destroy();
        resolve(d.toString());
      });
      s.on('error', reject);
    });
    assert.match(reply, /^-NOAUTH/);
    assert.ok(secured.password && secured.password.length >= 32, 'a random password per server');
    assert.ok(!cmdline(secured.child.pid!).includes(secured.password!), 'the password is not in the server argv');
  });

  test('orch worker refuses a Redis without a password, and comes up with --insecure-redis, warning', async () => {
    const w = await spawnWorker({
      redisUrl: open.url,
      host: 'a1',
      prefix: freshPrefix(),
      lockDir: join(dir, 'l1'),
      noWait: true,
    });
    workers.push(w);
    assert.deepEqual(await w.exited, { code: 2, signal: null });
    assert.match(w.log(), /answers without a password: anyone who can reach it can queue work that this worker runs/);
    assert.match(w.log(), /hint: set `requirepass/);
    const w2 = await spawnWorker({
      redisUrl: open.url,
      host: 'a2',
      prefix: freshPrefix(),
      lockDir: join(dir, 'l2'),
      args: ['--insecure-redis'],
    });
    workers.push(w2);
    assert.match(w2.log(), /answers without a password.*--insecure-redis given/);
  });

  test('orch serve refuses a Redis without a password', async () => {
    const s = spawnOrch(['serve'], { REDIS_URL: open.url, ORCH_PREFIX: freshPrefix(), ORCH_LOG: 'warn' });
    const killer = setTimeout(() => s.child.kill('SIGKILL'), 60_000);
    const exit = await s.exited;
    clearTimeout(killer);
    assert.deepEqual(exit, { code: 2, signal: null }, s.out());
    assert.match(s.out(), /answers without a password/);
  });

  test('--redis with a password is refused; --redis-url-file (0600) works and keeps it out of argv', async () => {
    const w = await spawnWorker({
      redisUrl: '',
      env: { REDIS_URL: '' },
      host: 'a3',
      prefix: freshPrefix(),
      lockDir: join(dir, 'l3'),
      args: ['--redis', secured.url],
      noWait: true,
    });
    workers.push(w);
    assert.deepEqual(await w.exited, { code: 2, signal: null });
    assert.match(
      w.log(),
      /--redis redis:\/\/:\*\*\*@127\.0\.0\.1:\d+: a URL with a password on the command line is readable by every local user/,
    );
    assert.ok(!w.log().includes(secured.password!), 'the refusal does not print the password');

    const loose = join(dir, 'url-loose');
    writeFileSync(loose, `${secured.url}\n`, { mode: 0o644 });
    const w4 = await spawnWorker({
      redisUrl: '',
      env: { REDIS_URL: '' },
      host: 'a4',
      prefix: freshPrefix(),
      lockDir: join(dir, 'l4'),
      args: ['--redis-url-file', loose],
      noWait: true,
    });
    workers.push(w4);
    assert.deepEqual(await w4.exited, { code: 2, signal: null });
    assert.match(w4.log(), /mode 644.*must belong to you and be readable by you alone/);

    const file = join(dir, 'url');
    writeFileSync(file, `${secured.url}\n`, { mode: 0o600 });
    const w5 = await spawnWorker({
      redisUrl: '',
      env: { REDIS_URL: '' },
      host: 'a5',
      prefix: freshPrefix(),
      lockDir: join(dir, 'l5'),
      args: ['--redis-url-file', file],
    });
    workers.push(w5);
    assert.ok(!cmdline(w5.child.pid!).includes(secured.password!));
    assert.ok(!w5.log().includes(secured.password!), 'no log line holds the password');
  });
});
