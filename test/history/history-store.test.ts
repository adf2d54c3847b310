/**
 * The history store against a real SQLite file and a real PostgreSQL database, the same tests
 * for both: migrations run once and record their version; a run is claimed once per suite and
 * scheduled time (the idempotency key), also by two claimers at once; rows round-trip with
 * their types, a confirmation run's beside the row it checked; a stalled run shows as troubled; an unreachable PostgreSQL is refused naming the
 * URL with its password masked.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type HistoryStore, runId } from '../../history/history-store.ts';
import { migrate, migrations } from '../../history/migrate.ts';
import { openHistory } from '../../history/open-history.ts';
import type { SqlDb } from '../../history/sql-db.ts';
import { BACKENDS, type Backend, freshBackend } from '../utils/history-backends.ts';
import { row } from './nightly-row.ts';

/** A fresh database migrated up to `version` only, with what `seed` wrote there as an older orch would have. */
async function atSchema(
  name: (typeof BACKENDS)[number],
  version: number,
  seed: (db: SqlDb) => Promise<void>,
): Promise<Backend> {
  const old = await freshBackend(name);
  const db = old.target.url
    ? (await import('../../history/postgres-db.ts')).openPostgres(old.target.url)
    : (await import('../../history/sqlite-db.ts')).openSqlite(old.target.file);
  try {
    await migrate(
      db,
      migrations().filter((m) => m.version <= version),
    );
    await seed(db);
  } finally {
    await db.close();
  }
  return old;
}

for (const name of BACKENDS) {
  describe(`history store on ${name}`, { timeout: 30_000 }, () => {
    let backend: Backend;
    let store: HistoryStore;

    before(async () => {
      backend = await freshBackend(name);
      store = await openHistory(backend.target);
    });

    after(async () => {
      await store?.close();
      await backend?.drop();
    });

    it('migrations are applied once and recorded in schema_version', async () => {
      const versions = await store.db.all<{ version: number }>('SELECT version FROM schema_version ORDER BY version');
      assert.deepEqual(
        versions.map((v) => v.version),
        migrations().map((m) => m.version),
      );
      assert.deepEqual(await migrate(store.db), []);
      const again = await openHistory(backend.target);
      await again.close();
    });

    it('a database of an older schema is migrated in place: its runs read back, their orch_dirty unknown', async () => {
      const old = await atSchema(name, 2, async (db) => {
        await db.run(
          `INSERT INTO nightly_runs (id, suite, scheduled_at, started_at, heartbeat_at, state, orch_version, orch_commit, serve_host) VALUES (?, ?, ?, ?, ?, 'done', ?, ?, ?)`,
          ['old@1', 'old', 1, 1, 1, '0.1.0', 'abc123', 'h'],
        );
      });
      try {
        const upgraded = await openHistory(old.target);
        try {
          const run = await upgraded.run('old@1');
          assert.deepEqual([run?.orch_commit, run?.orch_dirty], ['abc123', null]);
          const { run: next } = await upgraded.claimRun({
            suite: 'old',
            scheduledAt: 2,
            orchVersion: '0.1.0',
            orchCommit: 'abc123',
            orchDirty: true,
            serveHost: 'h',
          });
          assert.equal(next.orch_dirty, true);
        } finally {
          await upgraded.close();
        }
      } finally {
        await old.drop();
      }
    });

    it('a run is claimed once per suite and scheduled time, also when two claim at once', async () => {
      const at = Date.UTC(2026, 0, 1, 2);
      const other = await openHistory(backend.target);
      try {
        const claim = {
          suite: 'nightly',
          scheduledAt: at,
          orchVersion: '0.1.0',
          orchCommit: 'c0ffee',
          orchDirty: true,
          serveHost: 'h',
        };
        const [a, b] = await Promise.all([store.claimRun(claim), other.claimRun(claim)]);
        assert.deepEqual([a.claimed, b.claimed].sort(), [false, true]);
        assert.equal(a.run.id, runId('nightly', at));
        assert.equal(a.run.state, 'running');
        assert.equal(a.run.scheduled_at, at);
        // which orch ran the night: its commit and whether its checkout had uncommitted changes
        assert.deepEqual([a.run.orch_commit, a.run.orch_dirty], ['c0ffee', true]);
        const clean = await store.claimRun({ ...claim, scheduledAt: at + 1, orchDirty: false });
        assert.equal(clean.run.orch_dirty, false);
        const unknown = await store.claimRun({ ...claim, scheduledAt: at + 2, orchDirty: undefined });
        assert.equal(unknown.run.orch_dirty, null);
        await store.setExperiments(a.run.id, [{ file: '/x/ab.yaml', experiment: 'e1' }]);
        const third = await other.claimRun(claim);
        assert.equal(third.claimed, false);
        assert.deepEqual(third.run.experiments, [{ file: '/x/ab.yaml', experiment: 'e1' }]);
      } finally {
        await other.close();
      }
    });

    it('rows round-trip with their types; finishing a run ends it; runs and rows read back in order', async () => {
      const t1 = Date.UTC(2026, 0, 2, 2);
      const t2 = Date.UTC(2026, 0, 3, 2);
      for (const [t, change] of [
        [t2, 0.05],
        [t1, 0.001],
      ] as const) {
        const { run } = await store.claimRun({
          suite: 'rt',
          scheduledAt: t,
          orchVersion: null,
          orchCommit: null,
          serveHost: 'h',
        });
        await store.finishRun(run.id, {
          state: 'done',
          error: null,
          alerts: change > 0.01 ? 1 : 0,
          rows: [row({ run_id: run.id, suite: 'rt', scheduled_at: t, change })],
        });
      }
      const runs = await store.runs('rt');
      assert.deepEqual(
        runs.map((r) => [r.scheduled_at, r.state, r.alerts]),
        [
          [t2, 'done', 1],
          [t1, 'done', 0],
        ],
      );
      const rows = await store.rows('rt');
      assert.deepEqual(
        rows.map((r) => r.change),
        [0.001, 0.05],
      );
      assert.deepEqual(rows[1], row({ run_id: runId('rt', t2), suite: 'rt', scheduled_at: t2, change: 0.05 }));
    });

    it("a suspected regression's row and its confirmation run's row of the same comparison are both kept, the night's own first", async () => {
      const t = Date.UTC(2026, 0, 4, 2);
      const { run } = await store.claimRun({
        suite: 'cf',
        scheduledAt: t,
        orchVersion: null,
        orchCommit: null,
        serveHost: 'h',
      });
      const suspect = row({
        run_id: run.id,
        suite: 'cf',
        scheduled_at: t,
        experiment: 'e1',
        finding: 'regression-unconfirmed',
      });
      const confirmation = row({
        run_id: run.id,
        suite: 'cf',
        scheduled_at: t,
        experiment: 'e1-again',
        verdict: 'inconclusive',
        finding: 'confirmation-not-slower',
        confirms: 'e1',
      });
      await store.finishRun(run.id, { state: 'done', error: null, alerts: 0, rows: [confirmation, suspect] });
      assert.deepEqual(await store.rows('cf'), [suspect, confirmation]);
    });

    it("a row's Slurm placement (jobs, nodes, partitions) and its node change round-trip; outside Slurm it reads back null", async () => {
      const t = Date.UTC(2026, 0, 5, 2);
      const { run } = await store.claimRun({
        suite: 'sl',
        scheduledAt: t,
        orchVersion: null,
        orchCommit: null,
        serveHost: 'h',
      });
      const onSlurm = row({
        run_id: run.id,
        suite: 'sl',
        scheduled_at: t,
        arm: 'b',
        slurm: { jobs: ['41', '42'], nodes: ['gpu01', 'gpu02'], partitions: ['h200'] },
        node_change: 'ran on Slurm nodes gpu01, gpu02; the night before on gpu03',
      });
      const outside = row({ run_id: run.id, suite: 'sl', scheduled_at: t, arm: 'c' });
      await store.finishRun(run.id, { state: 'done', error: null, alerts: 0, rows: [onSlurm, outside] });
      assert.deepEqual(await store.rows('sl'), [onSlurm, outside]);
      const [raw] = await store.db.all<Record<string, unknown>>(
        "SELECT slurm_jobs, slurm_nodes, slurm_partitions FROM nightly_rows WHERE suite = 'sl' AND arm = 'b'",
      );
      assert.deepEqual(raw, {
        slurm_jobs: '["41","42"]',
        slurm_nodes: '["gpu01","gpu02"]',
        slurm_partitions: '["h200"]',
      });
    });

    it('a database at schema 005 is migrated to 006 in place: its rows read back with no Slurm placement and no node change', async () => {
      const old = await atSchema(name, 5, async (db) => {
        await db.run(
          `INSERT INTO nightly_runs (id, suite, scheduled_at, started_at, heartbeat_at, state) VALUES ('old@1', 'old', 1, 1, 1, 'done')`,
        );
        await db.run(
          `INSERT INTO nightly_rows (run_id, suite, scheduled_at, spec_file, experiment_state, arm, reference, hosts) VALUES ('old@1', 'old', 1, '/x/ab.yaml', 'done', 'b', 'a', '["h1"]')`,
        );
      });
      try {
        const upgraded = await openHistory(old.target);
        try {
          const [r] = await upgraded.rows('old');
          assert.deepEqual([r?.hosts, r?.slurm, r?.node_change], [['h1'], null, null]);
        } finally {
          await upgraded.close();
        }
      } finally {
        await old.drop();
      }
    });

    it('a failed run and a running run whose heartbeat is old are troubled', async () => {
      const now = Date.now();
      const failed = await store.claimRun({
        suite: 'tr',
        scheduledAt: now - 1000,
        orchVersion: null,
        orchCommit: null,
        serveHost: 'h',
      });
      await store.finishRun(failed.run.id, {
        state: 'failed',
        error: 'spec x stopped validating',
        alerts: 1,
        rows: [],
      });
      const stalled = await store.claimRun({
        suite: 'tr',
        scheduledAt: now - 500,
        orchVersion: null,
        orchCommit: null,
        serveHost: 'h',
      });
      await store.db.run('UPDATE nightly_runs SET heartbeat_at = ? WHERE id = ?', [now - 3_600_000, stalled.run.id]);
      await store.claimRun({ suite: 'tr', scheduledAt: now, orchVersion: null, orchCommit: null, serveHost: 'h' });
      const troubled = (await store.troubled(now - 60_000, 600_000)).filter((r) => r.suite === 'tr');
      assert.deepEqual(
        troubled.map((r) => [r.id, r.state, r.stalled]),
        [
          [stalled.run.id, 'running', true],
          [failed.run.id, 'failed', false],
        ],
      );
    });
  });
}

describe('an unreachable history database', () => {
  it('is refused naming the URL with its password masked, and the fix', async () => {
    await assert.rejects(
      openHistory({ url: 'postgres://orch:s3cret-pw@127.0.0.1:1/history', file: '' }),
      (err: Error & { code?: string; hint?: string }) => {
        assert.equal(err.code, 'HISTORY_UNREACHABLE');
        assert.match(
          err.message,
          /cannot open the nightly history database postgres:\/\/orch:\*+@127\.0\.0\.1:1\/history/,
        );
        assert.ok(!err.message.includes('s3cret-pw'), err.message);
        assert.match(err.hint ?? '', /ORCH_DB_URL/);
        return true;
      },
    );
  });
});
