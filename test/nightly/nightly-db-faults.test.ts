/**
 * Nights that meet a faulty history database, against the real thing: a real PostgreSQL behind a
 * TCP proxy the test cuts (the database stops mid-night, then comes back), a SQLite file of
 * garbage bytes under a real `orch serve`, and a SQLite file whose write lock a second process
 * holds (`BEGIN EXCLUSIVE` in a child). Each night either records once the fault passes or alerts
 * naming the database (password masked) and the fix, fails with a registered code, and is never
 * left `running`: the next night of the suite ends it as failed with the reason.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Queue } from 'bullmq';
import pino from 'pino';
import { type HistoryStore, runId } from '../../history/history-store.ts';
import { openHistory } from '../../history/open-history.ts';
import { cancelExperiment } from '../../orchestrator/experiment/cancel.ts';
import type { NightlyAlert } from '../../orchestrator/nightly/nightly-alert.ts';
import { type NightContext, runNight } from '../../orchestrator/nightly/nightly-run.ts';
import { nightlyTrouble } from '../../orchestrator/nightly/nightly-trouble.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { type Cluster, runOrch, startCluster } from '../orchestrator/orch-cluster.ts';
import { type Backend, freshBackend } from '../utils/history-backends.ts';
import { client, freshPrefix } from '../utils/redis.ts';
import { startTcpProxy, type TcpProxy } from '../utils/tcp-proxy.ts';
import { waitFor } from '../utils/wait-for.ts';

const DAY = 24 * 3600 * 1000;
const silent = pino({ level: 'silent' });

describe('a night whose PostgreSQL stops mid-night', { timeout: 90_000 }, () => {
  const PASSWORD = 's3cret-night-pw';
  let backend: Backend;
  let proxy: TcpProxy;
  let server: RedisServerProcess;
  let cluster: Cluster;
  let dir: string;
  let direct: HistoryStore;
  let viaProxy: HistoryStore;

  before(async () => {
    backend = await freshBackend('postgres');
    proxy = await startTcpProxy({ port: 5432 });
    server = await startRedisServer();
    cluster = await startCluster(server);
    cluster.startServe();
    dir = mkdtempSync(join(tmpdir(), 'orch-night-pg-'));
    copyFileSync(join('configs', 'ab.yaml'), join(dir, 'ab.yaml'));
    direct = await openHistory(backend.target);
    // Trust auth takes any password: the URL carries one, so every text can be checked for it.
    const url = new URL(proxy.urlFor(backend.target.url!));
    url.password = PASSWORD;
    viaProxy = await openHistory({ url: url.toString(), file: '' });
  });

  after(async () => {
    await viaProxy?.close().catch(() => undefined);
    await direct?.close();
    await proxy?.close();
    await cluster?.stop();
    await backend?.drop();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('alerts naming the database (password masked) and the fix, fails HISTORY_UNAVAILABLE, and the next night ends it failed with the reason', async () => {
    const redis = client(server.url);
    const at = Date.UTC(2030, 0, 1, 2);
    const data = {
      suite: 'pgdown',
      file: join(dir, 'suite.yaml'),
      experiments: [join(dir, 'ab.yaml')],
      results: join(dir, 'results'),
    };
    const alerts: NightlyAlert[] = [];
    const ctx: NightContext = {
      redis,
      prefix: cluster.prefix,
      history: viaProxy,
      log: silent,
      resultsRoot: data.results,
      heartbeatMs: 200,
      historyRetry: { attempts: 4, firstDelayMs: 100 },
      send: async (a) => void alerts.push(a),
    };
    try {
      const night = runNight(ctx, data, at).then(
        () => null,
        (e: Error & { code?: string }) => e,
      );
      const id = runId('pgdown', at);
      const run = await waitFor(
        'the night recorded its experiment',
        async () => ((await direct.run(id))?.experiments.length ? direct.run(id) : null),
        { timeoutMs: 30_000 },
      );
      proxy.refuse(true);
      // The experiment ends while the database is away: the night's rows cannot be written. The
      // night records an experiment's id before it submits it (nightly-run.ts), so the id can be
      // in the history a moment before the experiment is in Redis: cancel once it is there.
      await waitFor(
        'the recorded experiment submitted and cancelled',
        () => cancelExperiment(redis, cluster.prefix, run.experiments[0]!.experiment),
        { timeoutMs: 30_000 },
      );
      const err = await night;
      assert.equal((await direct.run(id))!.state, 'running', 'the database never took the end of the night');

      proxy.refuse(false);
      const next = await runNight({ ...ctx, send: async () => undefined }, { ...data, experiments: [] }, at + DAY);
      assert.equal(next.state, 'done');
      const ended = (await direct.run(id))!;
      assert.equal(ended.state, 'failed', `the night left running is ended by the next one: ${JSON.stringify(ended)}`);
      assert.match(ended.error ?? '', /could not record the night's \d+ rows and its end \(\w+\) after 4 tries/);
      assert.match(
        ended.error ?? '',
        new RegExp(
          `the history database postgres://postgres:\\*\\*\\*@127\\.0\\.0\\.1:${proxy.port}/\\w+ does not answer`,
        ),
      );
      assert.match(ended.error ?? '', /start PostgreSQL there/);
      assert.match(
        ended.error ?? '',
        new RegExp(`ended as failed by the run ${runId('pgdown', at + DAY).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
      );

      assert.ok(err, 'the night failed');
      assert.equal(err.code, 'HISTORY_UNAVAILABLE', err.message);
      // The night's own findings alert first (its experiment was cancelled); the last says the history failed.
      const alert = alerts.at(-1)!;
      assert.equal(alert.kind, 'failed');
      assert.match(alert.text, /nightly history: could not record the night's \d+ rows/);
      assert.match(
        alert.text,
        new RegExp(`postgres://postgres:\\*\\*\\*@127\\.0\\.0\\.1:${proxy.port}/\\w+ does not answer`),
      );
      for (const text of [err.message, ...alerts.map((a) => a.text), ended.error ?? ''])
        assert.ok(!text.includes(PASSWORD), text);

      const trouble = await nightlyTrouble({ ORCH_DB_URL: backend.target.url! });
      const listed = trouble.runs?.find((r) => r.id === id);
      assert.deepEqual([listed?.state, listed?.stalled], ['failed', false], JSON.stringify(trouble));
    } finally {
      redis.disconnect();
    }
  });
});

describe('a night whose SQLite history file is garbage', { timeout: 90_000 }, () => {
  let cluster: Cluster;
  let dir: string;
  let queue: Queue;

  before(async () => {
    cluster = await startCluster();
    queue = new Queue('nightly', { connection: cluster.redis, prefix: cluster.prefix });
    dir = mkdtempSync(join(tmpdir(), 'orch-night-notadb-'));
    copyFileSync(join('configs', 'ab.yaml'), join(dir, 'ab.yaml'));
  });

  after(async () => {
    await queue?.close();
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('orch serve alerts naming the file and the fix, fails the job, and leaves the file as it was', async () => {
    const garbage = join(dir, 'history.sqlite');
    const bytes = Buffer.alloc(16_384, 0x5a);
    writeFileSync(garbage, bytes);
    const alertFile = join(dir, 'results', 'alerts.jsonl');
    const suite = join(dir, 'notadb.yaml');
    writeFileSync(
      suite,
      `kind: suite\nname: notadb\nschedule:\n  cron: "0 2 * * *"\nexperiments:\n  - ab.yaml\nalerts:\n  file: results/alerts.jsonl\n`,
    );
    cluster.env.ORCH_HISTORY_DB = garbage;
    cluster.startServe();
    // Installed from a shell whose history is sound: the night meets the garbage in orch serve.
    const inst = await runOrch(
      ['nightly', 'install', suite, '--every', '1000'],
      { ...cluster.env, ORCH_HISTORY_DB: join(dir, 'sound.sqlite') },
      30_000,
    );
    assert.equal(inst.code, 0, inst.stderr);
    try {
      const line = await waitFor(
        'an alert line',
        () => (existsSync(alertFile) ? readFileSync(alertFile, 'utf8').split('\n').find(Boolean) : null),
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      const alert = JSON.parse(line) as NightlyAlert;
      assert.equal(alert.kind, 'failed');
      assert.ok(
        alert.text.includes(
          `history database ${garbage}: it is not a SQLite database (SQLITE_NOTADB: file is not a database)`,
        ),
        alert.text,
      );
      assert.ok(alert.text.includes(`move it aside (mv ${garbage} ${garbage}.not-sqlite)`), alert.text);
      const failed = await waitFor('the failed nightly job', async () => (await queue.getFailed())[0], {
        timeoutMs: 30_000,
        intervalMs: 100,
      });
      assert.ok(failed.failedReason.includes(`${garbage}: it is not a SQLite database`), failed.failedReason);
      assert.deepEqual(readFileSync(garbage), bytes, 'orch never wrote into the file it could not read');
    } finally {
      assert.equal((await runOrch(['nightly', 'remove', 'notadb'], cluster.env, 30_000)).code, 0);
    }
  });
});

describe('a night whose SQLite history another process holds locked', { timeout: 90_000 }, () => {
  let server: RedisServerProcess;
  let dir: string;
  let file: string;
  let history: HistoryStore;
  const holders: ChildProcess[] = [];

  before(async () => {
    server = await startRedisServer();
    dir = mkdtempSync(join(tmpdir(), 'orch-night-busy-'));
    file = join(dir, 'history.sqlite');
    history = await openHistory({ url: null, file, busyTimeoutMs: 200 });
  });

  after(async () => {
    for (const h of holders) if (h.exitCode === null && h.signalCode === null) h.kill('SIGKILL');
    await history?.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A second process inside BEGIN EXCLUSIVE on the file until `release()` (or `holdMs`). */
  async function holdLock(holdMs: number): Promise<{ pid: number; released: Promise<void> }> {
    const script = `const D = require('better-sqlite3'); const d = new D(process.env.DB); d.exec('BEGIN EXCLUSIVE'); console.log('locked');
      setTimeout(() => { d.exec('COMMIT'); d.close(); console.log('released'); }, Number(process.env.HOLD_MS));`;
    const child = spawn(process.execPath, ['-e', script], {
      env: { ...process.env, DB: file, HOLD_MS: String(holdMs) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    holders.push(child);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    await waitFor('the child holds the lock', () => out.includes('locked'), { timeoutMs: 10_000 });
    return {
      pid: child.pid!,
      released: waitFor('the child released the lock', () => out.includes('released'), {
        timeoutMs: holdMs + 10_000,
      }).then(() => undefined),
    };
  }

  function ctxFor(
    alerts: NightlyAlert[],
    retry: NonNullable<NightContext['historyRetry']>,
  ): NightContext & { redis: ReturnType<typeof client> } {
    return {
      redis: client(server.url),
      prefix: freshPrefix('busy'),
      history,
      log: silent,
      resultsRoot: join(dir, 'results'),
      heartbeatMs: 200,
      historyRetry: retry,
      send: async (a) => void alerts.push(a),
    };
  }

  it('longer than one busy timeout: the claim is retried and the night recorded once the lock is released', async () => {
    const alerts: NightlyAlert[] = [];
    const ctx = ctxFor(alerts, { attempts: 8, firstDelayMs: 250 });
    const at = Date.UTC(2030, 0, 1, 2);
    try {
      // Held past SQLite's own 5 s wait as well, so only the night's retries can ride it out.
      const lock = await holdLock(6000);
      const out = await runNight(ctx, { suite: 'busy', file: join(dir, 'busy.yaml'), experiments: [] }, at);
      await lock.released;
      assert.deepEqual([out.claimed, out.state], [true, 'done']);
      assert.equal((await history.run(runId('busy', at)))!.state, 'done');
      assert.deepEqual(alerts, []);
    } finally {
      ctx.redis.disconnect();
    }
  });

  it('past every retry: alerts naming the file and the process holding the lock; a retry of the night once released records it failed with that reason', async () => {
    const alerts: NightlyAlert[] = [];
    const ctx = ctxFor(alerts, { attempts: 3, firstDelayMs: 100 });
    const at = Date.UTC(2030, 0, 2, 2);
    const data = { suite: 'locked', file: join(dir, 'locked.yaml'), experiments: [] };
    try {
      const lock = await holdLock(3000);
      const err = await runNight(ctx, data, at).then(
        () => null,
        (e: Error & { code?: string }) => e,
      );
      assert.equal(alerts.length, 1, 'the night alerted');
      assert.ok(err, 'the night failed');
      assert.equal(err.code, 'HISTORY_UNAVAILABLE', err.message);
      const text = alerts[0]!.text;
      assert.ok(text.includes(`could not claim the night (insert its run) after 3 tries`), text);
      assert.ok(
        text.includes(`the history database ${file} is locked (SQLITE_BUSY: database is locked): pid ${lock.pid} (`),
        text,
      );
      assert.match(text, /end that process or its open transaction/);
      assert.equal(await history.run(runId('locked', at)), null, 'nothing could be written');

      await lock.released;
      const retried = await runNight({ ...ctx, send: async () => undefined }, data, at);
      assert.deepEqual([retried.claimed, retried.state], [false, 'failed']);
      const run = (await history.run(runId('locked', at)))!;
      assert.equal(run.state, 'failed');
      assert.ok(
        run.error?.includes(`${file} is locked (SQLITE_BUSY: database is locked): pid ${lock.pid}`),
        run.error ?? '',
      );
    } finally {
      ctx.redis.disconnect();
    }
  });
});
