/**
 * Two nightly processors racing for one night (a stalled job handed to a second `orch serve`
 * while the first still runs) submit each spec once: both run runNight for the same suite and
 * scheduled time at once, each with its own history connection, against a real redis-server and
 * a real database (SQLite and PostgreSQL). One takes the Redis key and the row and submits; the
 * other waits while the first beats and then finds the night run. An `orch serve` schedules
 * (and ends cancelled experiments); no worker: the test cancels each submitted experiment so the
 * night can end.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { type HistoryStore, runId } from '../../history/history-store.ts';
import { openHistory } from '../../history/open-history.ts';
import { cancelExperiment } from '../../orchestrator/experiment/cancel.ts';
import type { NightlyAlert } from '../../orchestrator/nightly/nightly-alert.ts';
import { runNight } from '../../orchestrator/nightly/nightly-run.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { NightlyClaims } from '../../store/nightly-claims.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { type Cluster, startCluster } from '../orchestrator/orch-cluster.ts';
import { BACKENDS, type Backend, freshBackend } from '../utils/history-backends.ts';
import { client } from '../utils/redis.ts';

const SPECS = ['ab.yaml', 'capture-probe.yaml'];

for (const name of BACKENDS) {
  describe(`two nightly processors for one night on ${name}`, { timeout: 60_000 }, () => {
    let backend: Backend;
    let server: RedisServerProcess;
    let cluster: Cluster;
    let dir: string;
    const histories: HistoryStore[] = [];

    before(async () => {
      backend = await freshBackend(name);
      server = await startRedisServer();
      cluster = await startCluster(server);
      cluster.startServe();
      dir = mkdtempSync(join(tmpdir(), 'orch-nightly-claim-'));
      for (const s of SPECS) copyFileSync(join('configs', s), join(dir, s));
    });

    after(async () => {
      for (const h of histories) await h.close();
      await cluster?.stop();
      await backend?.drop();
      await server?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('submit each spec once: one claims and submits, the other waits and submits nothing', async () => {
      const prefix = cluster.prefix;
      const redis = [client(server.url), client(server.url)];
      histories.push(await openHistory(backend.target), await openHistory(backend.target));
      const at = Date.UTC(2030, 0, 1, 2);
      const data = {
        suite: 'race',
        file: join(dir, 'suite.yaml'),
        experiments: SPECS.map((s) => join(dir, s)),
        results: join(dir, 'results'),
      };
      const alerts: NightlyAlert[][] = [[], []];
      const processor = (i: number) =>
        runNight(
          {
            redis: redis[i]!,
            prefix,
            history: histories[i]!,
            log: pino({ level: 'silent' }),
            resultsRoot: data.results,
            heartbeatMs: 200,
            send: async (a) => void alerts[i]!.push(a),
          },
          data,
          at,
        );

      // No worker runs them: each experiment the run recorded is cancelled once it exists.
      let cancelling = true;
      const canceller = (async () => {
        while (cancelling) {
          const run = await histories[0]!.run(runId('race', at));
          for (const e of run?.experiments ?? [])
            await cancelExperiment(redis[0]!, prefix, e.experiment).catch(() => undefined);
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      try {
        const outcomes = await Promise.all([processor(0), processor(1)]);
        const claimant = outcomes.findIndex((o) => o.claimed);
        assert.notEqual(claimant, -1, JSON.stringify(outcomes));
        const other = outcomes[1 - claimant]!;
        assert.equal(other.claimed, false);
        assert.deepEqual(other.submitted, [], 'the second processor submitted nothing');
        assert.equal(alerts[1 - claimant]!.length, 0, 'nor alerted');

        const submitted = await new ExperimentStore(redis[0]!, prefix).list();
        assert.equal(submitted.length, SPECS.length, `one experiment per spec: ${submitted.join(', ')}`);
        assert.deepEqual(outcomes[claimant]!.submitted.map((s) => s.experiment).sort(), [...submitted].sort());
        const run = (await histories[0]!.run(runId('race', at)))!;
        assert.deepEqual(run.experiments.map((e) => e.experiment).sort(), [...submitted].sort());
        assert.equal(run.state, 'failed', 'its experiments were cancelled');
        assert.ok(await new NightlyClaims(redis[0]!, prefix).holder('race', at), 'the night is held in Redis');
        assert.equal(other.state, run.state, 'the waiting processor reports how the night ended');
      } finally {
        cancelling = false;
        await canceller;
        for (const r of redis) r.disconnect();
      }
    });
  });
}
