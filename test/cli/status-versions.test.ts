/**
 * `orch status` flags a host whose worker registered another orch (version or commit) than the
 * one reading the status, once per host and on each of its cards; a host at this orch's version
 * is not flagged, whatever its graphrt build. A real redis-server and the real CLI.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { orchVersion } from '../../cli/version.ts';
import { formatWorkerVersion } from '../../jobs/worker-version.ts';
import { CardRegistry } from '../../store/card-registry.ts';
import { connectRedis } from '../../store/connect.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { freshPrefix } from '../utils/redis.ts';
import { runOrch } from './run-orch.ts';

describe('orch status: hosts of another version', { timeout: 60_000 }, () => {
  let redis: RedisServerProcess;
  let home: string;
  before(async () => {
    redis = await startRedisServer();
    home = mkdtempSync(join(tmpdir(), 'orch-home-'));
  });
  after(async () => {
    await redis?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('names the host that runs another orch and marks its cards; the host at this version is not flagged', async () => {
    const prefix = freshPrefix('ver');
    const own = orchVersion();
    const same = formatWorkerVersion({ orch: own.version, commit: own.commit, graphrt: 'g1' });
    const old = 'orch 0.0.1 commit deadbeef0000 graphrt g1';
    const conn = connectRedis(redis.url, { log: pino({ level: 'silent' }) });
    try {
      const registry = new CardRegistry(conn, { prefix });
      const card = (host: string) => ({
        id: `cpu:0@${host}`,
        host,
        backend: 'cpu' as const,
        index: 0,
        uuid: `cpu:0@${host}`,
        name: 'cpu',
      });
      await registry.register('newhost', [card('newhost')], { ttlMs: 60_000, pid: 1, version: same });
      await registry.register('oldhost', [card('oldhost')], { ttlMs: 60_000, pid: 2, version: old });
    } finally {
      conn.disconnect();
    }
    const env = { REDIS_URL: redis.url, ORCH_PREFIX: prefix, HOME: home };
    const text = runOrch(['status'], env);
    assert.equal(text.status, 0, text.stderr);
    assert.match(
      text.stdout,
      new RegExp(
        `^host oldhost runs ${old}, not orch ${own.version} commit \\S+: .*update its checkout and restart its worker`,
        'm',
      ),
    );
    assert.doesNotMatch(text.stdout, /^host newhost runs/m);
    assert.match(text.stdout, /cpu:0@oldhost .* version orch 0\.0\.1 commit deadbeef0000 graphrt g1 DIFFERS$/m);
    assert.doesNotMatch(text.stdout, /cpu:0@newhost .*DIFFERS/);

    const json = JSON.parse(runOrch(['status', '--json'], env).stdout) as {
      cards: { host: string; version: string; version_differs: boolean }[];
    };
    assert.deepEqual(
      json.cards.map((c) => [c.host, c.version, c.version_differs]),
      [
        ['newhost', same, false],
        ['oldhost', old, true],
      ],
    );
  });
});
