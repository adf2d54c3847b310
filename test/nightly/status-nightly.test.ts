/**
 * `orch status` lists the nightly runs that need a look, from the history database (SQLite and
 * PostgreSQL): a failed one with its error and a running one whose heartbeat went stale, in the
 * text and under `nightly` in --json; a night that ended well is not listed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { HistoryStore } from '../../history/history-store.ts';
import { openHistory } from '../../history/open-history.ts';
import type { NightlyTrouble } from '../../orchestrator/nightly/nightly-trouble.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { BACKENDS, type Backend, freshBackend } from '../utils/history-backends.ts';
import { runOrch } from '../utils/orch-run.ts';
import { freshPrefix } from '../utils/redis.ts';

for (const name of BACKENDS) {
  describe(`orch status: failed and stalled nightly runs on ${name}`, { timeout: 60_000 }, () => {
    let backend: Backend;
    let history: HistoryStore;
    let redis: RedisServerProcess;

    before(async () => {
      backend = await freshBackend(name);
      history = await openHistory(backend.target);
      redis = await startRedisServer();
    });

    after(async () => {
      await history?.close();
      await backend?.drop();
      await redis?.stop();
    });

    it('lists the failed run with its error and the stalled one with its last heartbeat; not the good one', async () => {
      const now = Date.now();
      const host = { orchVersion: null, orchCommit: null, serveHost: 'serve-1' };
      const good = await history.claimRun({ suite: 'st', scheduledAt: now - 3000, ...host });
      await history.finishRun(good.run.id, { state: 'done', error: null, alerts: 0, rows: [] });
      const failed = await history.claimRun({ suite: 'st', scheduledAt: now - 2000, ...host });
      await history.finishRun(failed.run.id, {
        state: 'failed',
        error: 'perf.yaml: experiment ended cancelled',
        alerts: 1,
        rows: [],
      });
      const stalled = await history.claimRun({ suite: 'st', scheduledAt: now - 1000, ...host });
      await history.db.run('UPDATE nightly_runs SET heartbeat_at = ? WHERE id = ?', [now - 3_600_000, stalled.run.id]);

      const env = { REDIS_URL: redis.url, ORCH_PREFIX: freshPrefix('st'), ...backend.env };
      const text = await runOrch(['status'], env);
      assert.equal(text.code, 0, text.output);
      assert.match(text.stdout, /\nnightly runs failed or stalled \(last 7 days; orch nightly status SUITE\)\n/);
      assert.match(
        text.stdout,
        new RegExp(
          `\\n  st ${new Date(now - 1000).toISOString()}  STALLED: running, last heartbeat \\S+ from serve-1 \\(its orch serve stopped; no retry took it over\\)\\n`,
        ),
      );
      assert.match(
        text.stdout,
        new RegExp(`\\n  st ${new Date(now - 2000).toISOString()}  FAILED: perf\\.yaml: experiment ended cancelled\\n`),
      );
      assert.ok(!text.stdout.includes(new Date(now - 3000).toISOString()), text.stdout);

      const json = await runOrch(['status', '--json'], env);
      assert.equal(json.code, 0, json.output);
      const nightly = (JSON.parse(json.stdout) as { nightly: NightlyTrouble }).nightly;
      assert.equal(nightly.error, null);
      assert.deepEqual(
        nightly.runs!.map((r) => [r.id, r.state, r.stalled]),
        [
          [stalled.run.id, 'running', true],
          [failed.run.id, 'failed', false],
        ],
      );
    });
  });
}
