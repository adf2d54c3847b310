/**
 * Signed nights: `orch serve`'s nightly processor runs only the jobs its suite's signed job
 * scheduler made (orchestrator/nightly/nightly-grant.ts). Jobs written straight into queue
 * `nightly` (what anyone who can write to Redis could do) name a planted secret file as their
 * spec and a planted stand-in of another user's `~/.bashrc` as their alert file: each is refused
 * before a file is read, counted, and the secret's marker appears nowhere — not in Redis, not in
 * the stand-in, not in the log. A legitimately installed suite whose spec file later holds the
 * secret fails its night with a reason that names the file and quotes none of its lines.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import pino from 'pino';
import { startNightlyWorker } from '../../orchestrator/nightly/nightly-processor.ts';
import { NightlySuites } from '../../orchestrator/nightly/nightly-suites.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { TEST_CLUSTER_SECRET } from '../utils/cluster-secret.ts';
import { client, freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';

/** Every value under `prefix` in Redis, as one text (strings, hashes, lists, sets, sorted sets, streams). */
async function redisText(redis: Redis, prefix: string): Promise<string> {
  const out: string[] = [];
  for (const key of await redis.keys(`${prefix}:*`)) {
    const type = await redis.type(key);
    const v =
      type === 'string'
        ? await redis.get(key)
        : type === 'hash'
          ? await redis.hgetall(key)
          : type === 'list'
            ? await redis.lrange(key, 0, -1)
            : type === 'set'
              ? await redis.smembers(key)
              : type === 'zset'
                ? await redis.zrange(key, '0', '-1')
                : type === 'stream'
                  ? await redis.xrange(key, '-', '+')
                  : null;
    out.push(`${key} ${JSON.stringify(v)}`);
  }
  return out.join('\n');
}

describe('signed nights', { timeout: 90_000 }, () => {
  let server: RedisServerProcess;
  let redis: Redis;
  let dir: string;
  let marker: string;
  let secretFile: string;
  let bashrc: string;
  const bashrcText = "# a stand-in for another user's ~/.bashrc\n";

  before(async () => {
    server = await startRedisServer();
    redis = client(server.url);
    dir = mkdtempSync(join(tmpdir(), 'orch-signed-nightly-'));
    process.env.ORCH_HISTORY_DB = join(dir, 'history.sqlite');
    marker = `MARKER${randomBytes(8).toString('hex')}`;
    // shaped like /etc/shadow: not YAML a spec could be, every line a key holding the secret
    secretFile = join(dir, 'shadow');
    writeFileSync(secretFile, `root:$6$${marker}:19000:0:99999:7:::\ndaemon:*:${marker}:0:99999:7:::\n`, {
      mode: 0o600,
    });
    mkdirSync(join(dir, 'home'));
    bashrc = join(dir, 'home', '.bashrc');
    writeFileSync(bashrc, bashrcText);
    copyFileSync(join('configs', 'ab.yaml'), join(dir, 'ab.yaml'));
  });

  after(async () => {
    redis?.disconnect();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function serve(prefix: string): { logs: () => string; close(): Promise<void> } {
    const lines: string[] = [];
    const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(s) });
    const w = startNightlyWorker({ url: server.url, prefix, log, secret: TEST_CLUSTER_SECRET });
    return { logs: () => lines.join(''), close: () => w.close() };
  }

  async function ended(q: Queue, match: (j: Job) => boolean): Promise<Job[]> {
    return (await q.getJobs(['completed', 'failed'])).filter(match);
  }

  it('jobs written into queue nightly (unsigned, by a scheduler of their own, a signed template altered or moved) are refused, counted, and read no file', async () => {
    const prefix = freshPrefix();
    const q = new Queue('nightly', { connection: redis, prefix });
    const suiteFile = join(dir, 'real.yaml');
    writeFileSync(suiteFile, 'kind: suite\nname: real\nschedule: { cron: "0 2 * * *" }\nexperiments: [ab.yaml]\n');
    const suites = new NightlySuites(redis, prefix, TEST_CLUSTER_SECRET);
    const w = serve(prefix);
    try {
      // a template signed at install, copied before the scheduler is removed (nothing legit runs here)
      await suites.install(suiteFile);
      const template = (await q.getJobScheduler('real'))!.template!.data as Record<string, unknown>;
      await suites.remove('real');
      const evil = {
        suite: 'evil',
        file: secretFile,
        experiments: [secretFile],
        results: join(dir, 'evil-results'),
        alerts: { file: bashrc },
      };
      const lastNight = Date.UTC(2026, 0, 1, 2);
      await q.add('nightly-suite', evil, { jobId: 'plain' });
      await q.upsertJobScheduler('evil', { every: 300 }, { name: 'nightly-suite', data: evil });
      await q.add('nightly-suite', { ...template, experiments: [secretFile], alerts: { file: bashrc } }, {
        jobId: `repeat:real:${lastNight}`,
        repeatJobKey: 'real',
        repeat: { pattern: '0 2 * * *', tz: 'UTC' },
      } as never);
      await q.add('nightly-suite', template, { jobId: 'moved' });
      const plain = await waitFor('the plain job ends', async () => (await ended(q, (j) => j.id === 'plain'))[0], {
        timeoutMs: 30_000,
        intervalMs: 100,
      });
      assert.match(
        plain.failedReason ?? '(completed)',
        /^nightly job plain refused: /,
        `job plain: ${plain.failedReason ?? 'completed'}`,
      );
      assert.equal(readFileSync(bashrc, 'utf8'), bashrcText, 'the stand-in ~/.bashrc was written');
      const attempts = () =>
        ended(
          q,
          (j) =>
            j.id === 'plain' ||
            j.id === 'moved' ||
            j.id === `repeat:real:${lastNight}` ||
            (j.id ?? '').startsWith('repeat:evil:'),
        );
      const done = await waitFor(
        'every injected job ends',
        async () => ((await attempts()).length >= 4 ? attempts() : null),
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      await q.removeJobScheduler('evil');
      for (const j of done)
        assert.match(
          j.failedReason ?? '(completed)',
          /^nightly job \S+ refused: /,
          `job ${j.id}: ${j.failedReason ?? 'completed'}`,
        );
      assert.ok(!existsSync(join(dir, 'evil-results')), 'a results directory of the injected job was made');
      const everything = await redisText(redis, prefix);
      assert.ok(
        !everything.includes(marker),
        `the secret file's content reached Redis:\n${everything
          .split('\n')
          .filter((l) => l.includes(marker))
          .join('\n')
          .slice(0, 500)}`,
      );
      assert.ok(!w.logs().includes(marker), "the secret file's content reached the log");
      const { RefusedJobs } = await import('../../store/refused-jobs.ts');
      const counts = await new RefusedJobs(redis, prefix).counts();
      assert.ok((counts['nightly/NIGHTLY_JOB_REFUSED'] ?? 0) >= 4, JSON.stringify(counts));
      // logged by id and code, never the data it carried
      assert.ok(w.logs().includes('"code":"NIGHTLY_JOB_REFUSED"'), w.logs().slice(-2000));
      assert.ok(!w.logs().includes(secretFile), "the log echoes the injected job's data");
    } finally {
      await w.close();
      await suites.close();
      await q.close();
    }
  });

  it('an installed suite whose spec file came to hold the secret: the night fails naming the file, its lines are nowhere; the alert file is 0600 under the results root', async () => {
    const prefix = freshPrefix();
    const q = new Queue('nightly', { connection: redis, prefix });
    const spec = join(dir, 'later.yaml');
    copyFileSync(join('configs', 'ab.yaml'), spec);
    const suiteFile = join(dir, 'owner.yaml');
    writeFileSync(
      suiteFile,
      'kind: suite\nname: owner\nschedule: { cron: "0 2 * * *" }\nexperiments: [later.yaml]\nresults: owner-results\nalerts: { file: owner-results/alerts.jsonl }\n',
    );
    const suites = new NightlySuites(redis, prefix, TEST_CLUSTER_SECRET);
    await suites.install(suiteFile, { every: 500 });
    // the file the suite names now holds what it should not (atomically: a night never reads half a file)
    copyFileSync(secretFile, `${spec}.tmp`);
    renameSync(`${spec}.tmp`, spec);
    const w = serve(prefix);
    try {
      const failed = await waitFor(
        'a failed night',
        async () =>
          (await ended(q, (j) => (j.id ?? '').startsWith('repeat:owner:') && j.failedReason !== undefined))[0],
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      await suites.remove('owner');
      assert.match(failed.failedReason, /^suite owner \(.*\): 1 of 1 specs not submitted/);
      assert.ok(failed.failedReason.includes(`${spec}:1 `), failed.failedReason);
      assert.ok(!failed.failedReason.includes(marker), `the failure reason quotes the file: ${failed.failedReason}`);
      const alerts = join(dir, 'owner-results', 'alerts.jsonl');
      await waitFor(
        'the alert line',
        () => (existsSync(alerts) && readFileSync(alerts, 'utf8').length > 0 ? true : null),
        { timeoutMs: 10_000 },
      );
      assert.ok(!readFileSync(alerts, 'utf8').includes(marker), 'the alert file quotes the secret file');
      assert.ok(readFileSync(alerts, 'utf8').includes(spec), 'the alert names the spec file');
      assert.equal(statSync(alerts).mode & 0o777, 0o600);
      const everything = await redisText(redis, prefix);
      assert.ok(
        !everything.includes(marker),
        `the secret file's content reached Redis:\n${everything
          .split('\n')
          .filter((l) => l.includes(marker))
          .join('\n')
          .slice(0, 500)}`,
      );
      assert.ok(!w.logs().includes(marker), "the secret file's content reached the log");
      const db = process.env.ORCH_HISTORY_DB!;
      const history = [db, `${db}-wal`]
        .filter((f) => existsSync(f))
        .map((f) => readFileSync(f).toString('latin1'))
        .join('');
      assert.ok(!history.includes(marker), "the secret file's content reached the history");
    } finally {
      await w.close();
      await suites.close();
      await q.close();
    }
  });

  it('an alert file outside the results root is refused at install; one reached through a link is never written', async () => {
    const prefix = freshPrefix();
    const q = new Queue('nightly', { connection: redis, prefix });
    const suites = new NightlySuites(redis, prefix, TEST_CLUSTER_SECRET);
    try {
      const suiteFile = join(dir, 'profile.yaml');
      writeFileSync(
        suiteFile,
        'kind: suite\nname: profile\nschedule: { cron: "0 2 * * *" }\nexperiments: [ab.yaml]\nalerts: { file: home/.bashrc }\n',
      );
      await assert.rejects(suites.install(suiteFile), (err: Error) => {
        assert.match(
          err.message,
          /alerts\.file: alert file .*home\/\.bashrc is outside the results root and ORCH_ALERT_DIR/,
        );
        return true;
      });
      assert.equal((await q.getJobSchedulers()).length, 0, 'a scheduler was written');

      const { appendAlertLine, alertRoots } = await import('../../orchestrator/nightly/alert-file.ts');
      const root = join(dir, 'link-results');
      mkdirSync(root);
      // the file itself a link to the stand-in, and a directory under the root that is a link out of it
      symlinkSync(bashrc, join(root, 'alerts.jsonl'));
      symlinkSync(join(dir, 'home'), join(root, 'out'));
      assert.throws(
        () => appendAlertLine(join(root, 'alerts.jsonl'), alertRoots(root, {}), 'x\n'),
        /is a symbolic link/,
      );
      assert.throws(
        () => appendAlertLine(join(root, 'out', '.bashrc'), alertRoots(root, {}), 'x\n'),
        /outside .* \(a link in the path\)/,
      );
      assert.throws(() => appendAlertLine(bashrc, alertRoots(root, {}), 'x\n'), /outside the results root/);
      assert.equal(readFileSync(bashrc, 'utf8'), bashrcText, 'the stand-in ~/.bashrc was written');
      // a directory orch serve's operator names is allowed too
      const extra = join(dir, 'alert-dir');
      appendAlertLine(join(extra, 'a.jsonl'), alertRoots(root, { ORCH_ALERT_DIR: extra }), 'x\n');
      assert.equal(statSync(join(extra, 'a.jsonl')).mode & 0o777, 0o600);
    } finally {
      await suites.close();
      await q.close();
    }
  });
});
