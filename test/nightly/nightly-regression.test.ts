/**
 * The nightly loop closed, end to end, on SQLite (test/nightly/paired-nightly.test.ts runs its loop on
 * PostgreSQL: test/utils/history-backends.ts oneBackend):
 * a real `orch serve` and `orch worker` against a real redis-server run a suite every second.
 * The workload is a command whose step time per arm comes from a file the test changes between
 * nights (test/fixtures/cmd-nightly/steps.sh). Three nights at the same workload are recorded
 * and raise no alert; a fluke (one experiment's candidate reps slow, its confirmation run not) is
 * recorded regression-unconfirmed beside its confirmation and raises none; a planted slowdown of
 * the candidate arm raises exactly one alert, confirmed by a paired confirmation run, received by
 * a local HTTP receiver, naming the suite, spec, change and CI and the results directory;
 * the history survives a Redis restart (a fresh redis-server, the rows still there and
 * `orch nightly history` / `status` print them).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Queue } from 'bullmq';
import type { HistoryStore } from '../../history/history-store.ts';
import { openHistory } from '../../history/open-history.ts';
import type { NightlyAlert } from '../../orchestrator/nightly/nightly-alert.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { type Cluster, runOrch, spawnOrch, startCluster } from '../orchestrator/orch-cluster.ts';
import { type Backend, freshBackend, oneBackend } from '../utils/history-backends.ts';
import { waitFor } from '../utils/wait-for.ts';
import { RUN_AS_SELF } from '../utils/worker-process.ts';
import { suiteNights } from './suite-nights.ts';

const STEPS = join(process.cwd(), 'test/fixtures/cmd-nightly/steps.sh');
const BASE_MS = 2;
const SLOWDOWN = 1.05;
// Workers refuse users' commands unless allowed, where this orch has that switch.
const ALLOW_COMMAND = readFileSync('cli/commands/worker.ts', 'utf8').includes("'allow-command'")
  ? ['--allow-command']
  : [];
// ... and run them as its own user where a root worker would switch to another (worker/run-as.ts)
const RUN_AS = readFileSync('worker/run-as.ts', 'utf8').includes('RUN_AS_NONE') ? RUN_AS_SELF : [];

function spec(msFile: string): string {
  return `name: nightly-candidate
design: ab
workload:
  runtime: command
  run:
    cmd: sh ${STEPS}
    env: { NIGHTLY_MS_FILE: "${msFile}" }
    timeout_s: 30
  toggles:
    CANDIDATE: { env: NIGHTLY_ARM, on: candidate, off: control }
  metric_source: { format: jsonl, field: ms, step_field: step }
  warmup: 2
  steps: 10
toggles: [CANDIDATE]
arms:
  - { name: control, toggles: { CANDIDATE: false } }
  - { name: candidate, toggles: { CANDIDATE: true } }
reps: 3
blocks: { count: 2, ranks: 1 }
gates: { identity: false, aa: true }
metric: { name: ms, better: lower }
`;
}

function receiver(): Promise<{ server: Server; url: string; received: NightlyAlert[] }> {
  const received: NightlyAlert[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      received.push(JSON.parse(body) as NightlyAlert);
      res.writeHead(200).end('ok');
    });
  });
  return new Promise((r) =>
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address() as { port: number };
      r({ server, url: `http://127.0.0.1:${addr.port}/hook`, received });
    }),
  );
}

for (const name of oneBackend('sqlite')) {
  describe(`nightly regression loop on ${name}`, { timeout: 360_000 }, () => {
    let backend: Backend;
    let redisServer: RedisServerProcess;
    let cluster: Cluster;
    let history: HistoryStore;
    let hook: Awaited<ReturnType<typeof receiver>>;
    let dir: string;
    let queue: Queue;

    before(async () => {
      backend = await freshBackend(name);
      history = await openHistory(backend.target);
      hook = await receiver();
      redisServer = await startRedisServer();
      cluster = await startCluster(redisServer);
      Object.assign(cluster.env, backend.env);
      queue = new Queue('nightly', { connection: cluster.redis, prefix: cluster.prefix });
      dir = mkdtempSync(join(tmpdir(), 'orch-nightly-loop-'));
    });

    after(async () => {
      await queue?.close().catch(() => undefined);
      await cluster?.stop().catch(() => undefined);
      await redisServer?.stop().catch(() => undefined);
      await history?.close();
      await backend?.drop();
      hook?.server.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    const setMs = (candidate: number) =>
      writeFileSync(join(dir, 'ms.txt'), `control ${BASE_MS}\ncandidate ${candidate}\n`);
    // the candidate's next `reps` reps slow (test/fixtures/cmd-nightly/steps.sh), the rest at the base
    const setFluke = (reps: number) =>
      writeFileSync(
        join(dir, 'ms.txt'),
        `control ${BASE_MS}\ncandidate ${BASE_MS} ${BASE_MS * SLOWDOWN} ${join(dir, 'fluke-count')} ${reps}\n`,
      );
    const nights = (count: number) =>
      suiteNights({ cluster, history, queue, suite: 'loop', file: join(dir, 'suite.yaml') })(count);

    it('three quiet nights, a fluke its confirmation does not repeat (no alert), then one planted slowdown: exactly one alert, confirmed, naming the change; the history outlives Redis', async () => {
      writeFileSync(join(dir, 'candidate.yaml'), spec(join(dir, 'ms.txt')));
      writeFileSync(
        join(dir, 'suite.yaml'),
        `kind: suite\nname: loop\nschedule: { cron: "0 2 * * *" }\nexperiments: [candidate.yaml]\nresults: results\nalerts:\n  webhook: ${hook.url}\n  file: results/alerts.jsonl\n`,
      );
      setMs(BASE_MS);
      cluster.startServe();
      const worker = spawnOrch(
        [
          'worker',
          '--host',
          'h1',
          '--cpu-cards',
          '1',
          '--heartbeat-ms',
          '1000',
          '--lock-dir',
          join(dir, 'locks'),
          '--prefix',
          cluster.prefix,
          ...ALLOW_COMMAND,
          ...RUN_AS,
        ],
        cluster.env,
      );
      try {
        await waitFor(
          'worker h1 registered',
          async () => (await cluster.redis.exists(`${cluster.prefix}:host:h1:alive`)) === 1,
          { timeoutMs: 30_000 },
        );

        await nights(3);
        const quiet = await history.runs('loop', 100);
        assert.ok(quiet.length >= 3, JSON.stringify(quiet));
        assert.deepEqual(
          quiet.map((r) => [r.state, r.alerts]),
          quiet.map(() => ['done', 0]),
          JSON.stringify(quiet.map((r) => r.error)),
        );
        const quietRows = await history.rows('loop');
        assert.deepEqual(
          quietRows.map((r) => [r.arm, r.reference, r.verdict, r.aa_pass]),
          quietRows.map(() => ['candidate', 'control', 'inconclusive', true]),
        );
        assert.equal(hook.received.length, 0, JSON.stringify(hook.received));

        // one night's experiment slow in every candidate rep (2 blocks × 3 reps), its confirmation not
        setFluke(6);
        await nights(1);
        const fluke = (await history.rows('loop')).filter((r) => r.finding === 'regression-unconfirmed');
        assert.equal(
          fluke.length,
          1,
          JSON.stringify({
            rows: (await history.rows('loop')).map((r) => [r.experiment, r.verdict, r.finding, r.confirms]),
            runs: (await history.runs('loop', 100)).map((r) => [r.state, r.error]),
          }),
        );
        assert.equal(fluke[0]!.verdict, 'slower');
        const flukeCheck = (await history.rows('loop')).filter((r) => r.confirms === fluke[0]!.experiment);
        assert.deepEqual(
          flukeCheck.map((r) => [r.arm, r.verdict, r.finding]),
          [['candidate', 'inconclusive', 'confirmation-not-slower']],
        );
        assert.equal(hook.received.length, 0, JSON.stringify(hook.received.map((a) => a.text)));

        setMs(BASE_MS * SLOWDOWN);
        await nights(1);
        await waitFor('the alert received', async () => hook.received.length >= 1, { timeoutMs: 30_000 });
        assert.equal(hook.received.length, 1, JSON.stringify(hook.received.map((a) => a.text)));
        const [alert] = hook.received;
        assert.equal(alert!.kind, 'regression');
        assert.equal(alert!.suite, 'loop');
        assert.equal(alert!.spec, 'nightly-candidate');
        assert.equal(alert!.comparison, 'candidate vs control');
        assert.ok(Math.abs(alert!.change! - (SLOWDOWN - 1)) < 0.01, `change ${alert!.change}`);
        assert.ok(
          alert!.ci![0] > 0 && alert!.ci![0] <= alert!.change! && alert!.change! <= alert!.ci![1],
          JSON.stringify(alert!.ci),
        );
        assert.ok(
          alert!.results_dir && existsSync(join(alert!.results_dir, 'report.json')),
          alert!.results_dir ?? 'no results dir',
        );
        assert.match(alert!.text, /regression: suite loop, spec nightly-candidate, candidate vs control/);
        assert.match(alert!.text, /change: \+\d\.\d % \(CI \+\d\.\d % to \+\d\.\d %\)/);
        assert.match(
          alert!.text,
          /; confirmed by a paired confirmation run on the same card class \(experiment \S+: slower by \+\d\.\d %, CI \+\d\.\d % to \+\d\.\d %\)/,
        );
        assert.ok(alert!.text.includes(`results: ${alert!.results_dir}`), alert!.text);
        const fileAlerts = readFileSync(join(dir, 'results', 'alerts.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as NightlyAlert);
        assert.deepEqual(
          fileAlerts.map((a) => a.text),
          [alert!.text],
        );
        const regressed = (await history.rows('loop')).filter((r) => r.finding === 'regression');
        assert.equal(regressed.length, 1);
        assert.equal(regressed[0]!.verdict, 'slower');
        const confirmation = (await history.rows('loop')).filter((r) => r.confirms === regressed[0]!.experiment);
        assert.deepEqual(
          confirmation.map((r) => [r.arm, r.verdict, r.finding]),
          [['candidate', 'slower', 'confirmation-slower']],
        );
        assert.ok(alert!.text.includes(`experiment ${confirmation[0]!.experiment}: slower`), alert!.text);
      } finally {
        worker.child.kill('SIGTERM');
        await worker.exited;
      }

      // Redis goes away with everything in it; the history does not.
      const rowsBefore = await history.rows('loop');
      for (const s of cluster.serves) s.child.kill('SIGTERM');
      await Promise.all(cluster.serves.map((s) => s.exited));
      await queue.close();
      cluster.redis.disconnect();
      await redisServer.stop();
      const fresh = await startRedisServer();
      try {
        const env = { ...cluster.env, REDIS_URL: fresh.url };
        const shown = await runOrch(['nightly', 'history', 'loop'], env, 30_000);
        assert.equal(shown.code, 0, shown.stderr);
        assert.match(shown.stdout, /nightly-candidate: candidate vs control\n {2}change [▁▂▃▄▅▆▇█]{4,}/);
        assert.equal(
          shown.stdout.split('\n').filter((l) => /^ {2}\d{4}-/.test(l)).length,
          rowsBefore.length,
          shown.stdout,
        );
        assert.match(shown.stdout, /done slower \+\d\.\d % .*\[regression\]/);
        const json = await runOrch(['nightly', 'history', 'loop', '--json'], env, 30_000);
        assert.deepEqual(JSON.parse(json.stdout), JSON.parse(JSON.stringify(rowsBefore)));
        const status = await runOrch(['nightly', 'status', 'loop'], env, 30_000);
        assert.equal(status.code, 0, status.stderr);
        assert.match(
          status.stdout,
          /^loop \S+ done, 1 alert\n {4}nightly-candidate candidate vs control: slower \+\d\.\d % \[regression\]/m,
        );
      } finally {
        await fresh.stop();
      }
    });
  });
}
