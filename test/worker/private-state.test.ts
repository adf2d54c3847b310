/**
 * The card locks live in a private per-user directory: the default is under $XDG_RUNTIME_DIR
 * (0700, lock files 0600), not a shared /tmp path; a lock directory that another user owns or
 * can write is refused naming it and the fix; a symlink planted as a card's lock file is
 * refused rather than followed. Results are written 0700/0600.
 */
import assert from 'node:assert/strict';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { FIXTURE_RANK, runOrch } from '../orchestrator/orch-cluster.ts';
import { freshPrefix } from '../utils/redis.ts';
import { spawnWorker, type WorkerProcess } from '../utils/worker-process.ts';

const mode = (p: string) => (statSync(p).mode & 0o777).toString(8);

describe('private state directories', { timeout: 180_000 }, () => {
  let server: RedisServerProcess;
  let dir: string;
  const workers: WorkerProcess[] = [];
  before(async () => {
    server = await startRedisServer();
    dir = mkdtempSync(join(tmpdir(), 'orch-private-'));
  });
  after(async () => {
    for (const w of workers) w.kill();
    await Promise.all(workers.map((w) => w.exited));
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const spawn = async (o: { host: string; lockDir: string; env?: Record<string, string>; noWait?: boolean }) => {
    const w = await spawnWorker({ redisUrl: server.url, prefix: freshPrefix(), cards: 'cpu:0', ...o });
    workers.push(w);
    return w;
  };

  test('default lock directory: $XDG_RUNTIME_DIR/orch/cards, 0700, lock files 0600', async () => {
    const xdg = join(dir, 'xdg');
    mkdirSync(xdg, { mode: 0o700 });
    const w = await spawn({ host: 'p1', lockDir: '', env: { XDG_RUNTIME_DIR: xdg } });
    const cards = join(xdg, 'orch', 'cards');
    assert.ok(existsSync(cards), 'the lock directory is under XDG_RUNTIME_DIR');
    assert.equal(mode(cards), '700');
    assert.deepEqual(readdirSync(cards), ['cpu_0@p1.lock']);
    assert.equal(mode(join(cards, 'cpu_0@p1.lock')), '600');
    w.kill();
  });

  test('a world-writable lock directory is refused, naming it and the fix', async () => {
    const shared = join(dir, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    const w = await spawn({ host: 'p2', lockDir: shared, noWait: true });
    assert.deepEqual(await w.exited, { code: 2, signal: null });
    assert.ok(
      w.log().includes(`orch: the card lock directory ${shared} is writable by group or others (mode 777)`),
      w.log(),
    );
    assert.ok(w.log().includes(`chmod 700 ${shared}`));
  });

  test('a lock directory owned by another user is refused', {
    skip: process.getuid?.() !== 0 && 'needs root to chown',
  }, async () => {
    const theirs = join(dir, 'theirs');
    mkdirSync(theirs, { mode: 0o700 });
    chownSync(theirs, 65534, 65534);
    const w = await spawn({ host: 'p3', lockDir: theirs, noWait: true });
    assert.deepEqual(await w.exited, { code: 2, signal: null });
    assert.match(w.log(), new RegExp(`the card lock directory ${theirs} is owned by uid 65534, not by you`));
  });

  test('a symlink planted as a card lock file is refused, not followed', async () => {
    const locks = join(dir, 'locks-sym');
    mkdirSync(locks, { mode: 0o700 });
    const victim = join(dir, 'victim-file');
    symlinkSync(victim, join(locks, 'cpu_0@p4.lock'));
    const w = await spawn({ host: 'p4', lockDir: locks, noWait: true });
    assert.deepEqual(await w.exited, { code: 2, signal: null });
    assert.match(w.log(), /card lock .*cpu_0@p4\.lock: cannot create it \(it is a symbolic link\)/);
    assert.ok(!existsSync(victim), 'nothing was created through the link');
  });

  test('results are written 0700 (directory) and 0600 (files)', async () => {
    const results = join(dir, 'results');
    const r = await runOrch(
      ['submit', 'test/fixtures/specs/tiny-ab.yaml', '--results', results],
      {
        REDIS_URL: '',
        ORCH_PREFIX: '',
        ORCH_LOG: 'warn',
        ORCH_GRAPHRT: FIXTURE_RANK,
        ORCH_CPU_CARDS: '2',
      },
      120_000,
    );
    // the submit exits with the verdict's code: two arms of the same fixture are inconclusive (3)
    assert.ok([0, 3, 4].includes(r.code ?? -1), `exit ${r.code}: ${r.stderr}`);
    const [id] = readdirSync(results);
    const out = join(results, id!);
    assert.equal(mode(out), '700');
    const files = readdirSync(out);
    assert.ok(files.includes('spec.yaml') && files.includes('summary.json'));
    for (const f of files) assert.equal(mode(join(out, f)), '600', f);
  });
});
