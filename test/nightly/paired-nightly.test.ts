/**
 * A paired nightly (`against: last_good`) end to end, on PostgreSQL where it runs, else SQLite
 * (test/nightly/nightly-regression.test.ts runs its loop on SQLite: history-backends.ts oneBackend): a real
 * `orch serve` and `orch worker` against a real redis-server, a throwaway git repository whose
 * two commits differ by a planted ~5 % of work per step (test/builds/planted-repo.ts). Nights 1
 * and 2 run with the checkout at commit A: the first has no last good night, so it is an A/A of
 * A (said so in its row); the second pairs A with the last good A. Then the checkout moves to B:
 * the next night pairs B against A in one experiment, finds it slower, and exactly one alert
 * names both commits.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Queue } from 'bullmq';
import type { HistoryStore } from '../../history/history-store.ts';
import { openHistory } from '../../history/open-history.ts';
import type { NightlyAlert } from '../../orchestrator/nightly/nightly-alert.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { type PlantedRepo, plantedRepo, plantedSpec } from '../builds/planted-repo.ts';
import { type Cluster, spawnOrch, startCluster } from '../orchestrator/orch-cluster.ts';
import { type Backend, freshBackend, oneBackend } from '../utils/history-backends.ts';
import { waitFor } from '../utils/wait-for.ts';
import { RUN_AS_SELF } from '../utils/worker-process.ts';
import { suiteNights } from './suite-nights.ts';

for (const name of oneBackend('postgres')) {
  describe(`paired nightly (against: last_good) on ${name}`, { timeout: 420_000 }, () => {
    let backend: Backend;
    let redisServer: RedisServerProcess;
    let cluster: Cluster;
    let history: HistoryStore;
    let repo: PlantedRepo;
    let dir: string;
    let queue: Queue;

    before(async () => {
      backend = await freshBackend(name);
      history = await openHistory(backend.target);
      redisServer = await startRedisServer();
      cluster = await startCluster(redisServer);
      dir = mkdtempSync(join(tmpdir(), 'orch-paired-'));
      Object.assign(cluster.env, backend.env, { ORCH_BUILD_DIR: join(dir, 'builds') });
      queue = new Queue('nightly', { connection: cluster.redis, prefix: cluster.prefix });
      repo = plantedRepo();
    });

    after(async () => {
      await queue?.close().catch(() => undefined);
      await cluster?.stop().catch(() => undefined);
      await redisServer?.stop().catch(() => undefined);
      await history?.close();
      await backend?.drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
      if (repo) rmSync(join(repo.dir, '..'), { recursive: true, force: true });
    });

    const nights = (count: number) =>
      suiteNights({ cluster, history, queue, suite: 'paired', file: join(dir, 'suite.yaml'), timeoutMs: 150_000 })(
        count,
      );

    it('nights at A pass (the first an A/A, said so); commit B 5 % slower: one paired night says slower, one alert names both commits', async () => {
      const a = repo.git('rev-parse', 'main');
      const b = repo.git('rev-parse', 'branch');
      repo.git('checkout', '-q', 'main');
      writeFileSync(
        join(dir, 'perf.yaml'),
        plantedSpec({
          name: 'perf',
          repo: repo.dir,
          builds: '  last_good: { ref: main }\n  tonight: { ref: HEAD }',
          arms: '  - { name: last_good, build: last_good }\n  - { name: tonight, build: tonight }',
          // more pairs than the builds tests use: a night's verdict must clear the ±1 % band, and the
          // PostgreSQL run (its server sharing the two cores) measured CIs up to ±5 % with 12 pairs
          reps: 10,
          blocks: 3,
        }),
      );
      writeFileSync(
        join(dir, 'suite.yaml'),
        'kind: suite\nname: paired\nschedule: { cron: "0 2 * * *" }\nexperiments:\n  - { spec: perf.yaml, against: last_good }\nresults: results\nalerts:\n  file: results/alerts.jsonl\n',
      );
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
          '--allow-command',
          ...RUN_AS_SELF,
        ],
        cluster.env,
      );
      try {
        await waitFor(
          'worker h1 registered',
          async () => (await cluster.redis.exists(`${cluster.prefix}:host:h1:alive`)) === 1,
          { timeoutMs: 30_000 },
        );

        await nights(2);
        const atA = await history.rows('paired');
        assert.ok(atA.length >= 2, JSON.stringify(atA));
        assert.deepEqual(
          atA.map((r) => [r.experiment_state, r.arm, r.reference, r.verdict, r.gates_pass]),
          atA.map(() => ['done', 'tonight', 'last_good', 'inconclusive', true]),
          JSON.stringify(atA.map((r) => r.error)),
        );
        assert.deepEqual(
          atA.map((r) => r.commits),
          atA.map(() => ({ last_good: a, tonight: a })),
        );
        assert.match(
          atA[0]!.pairing ?? '',
          /^unpaired: no night of this spec has passed yet, so tonight's commit \w{12} \(HEAD\) runs against itself \(an A\/A\)/,
        );
        for (const r of atA.slice(1))
          assert.match(
            r.pairing ?? '',
            new RegExp(
              `^paired: tonight ${a.slice(0, 12)} \\(HEAD\\) against last_good ${a.slice(0, 12)}, the last good night's commit`,
            ),
          );

        repo.git('checkout', '-q', 'branch');
        await nights(1);
        const atB = (await history.rows('paired')).filter((r) => r.commits.tonight === b);
        assert.ok(atB.length >= 1);
        const [first] = atB;
        console.log(
          `B vs A: ${((first!.change ?? NaN) * 100).toFixed(2)} % (CI ${((first!.ci_low ?? NaN) * 100).toFixed(2)}..${((first!.ci_high ?? NaN) * 100).toFixed(2)} %), planted ${(repo.planted * 100).toFixed(2)} %`,
        );
        assert.deepEqual(first!.commits, { last_good: a, tonight: b }, 'B paired against the last good A');
        assert.equal(first!.verdict, 'slower');
        assert.equal(first!.finding, 'regression');
        // Slower with the whole CI above zero; where inside it the planted 5 % falls is not asserted:
        // on a shared box the other jobs' load moves a CPU-time measurement by a percent or so.
        assert.ok(
          first!.ci_low! > 0 && first!.ci_low! <= first!.change! && first!.change! <= first!.ci_high!,
          `CI ${first!.ci_low}..${first!.ci_high} around ${first!.change}`,
        );
        // Later nights at B stay paired against A (a regressed night is not good), and are not alerted again.
        for (const r of atB) assert.equal(r.commits.last_good, a);

        const alerts = readFileSync(join(dir, 'results', 'alerts.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as NightlyAlert);
        assert.equal(alerts.length, 1, JSON.stringify(alerts.map((x) => x.text)));
        assert.equal(alerts[0]!.kind, 'regression');
        assert.equal(alerts[0]!.comparison, 'tonight vs last_good');
        assert.ok(
          alerts[0]!.text.includes(`last_good@${a.slice(0, 12)}`) &&
            alerts[0]!.text.includes(`tonight@${b.slice(0, 12)}`),
          alerts[0]!.text,
        );
      } finally {
        worker.child.kill('SIGTERM');
        await worker.exited;
      }
    });
  });
}
