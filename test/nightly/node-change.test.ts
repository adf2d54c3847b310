/**
 * Nights across a Slurm node change, on SQLite and on PostgreSQL (the same test for both): each
 * night's row is judged by the night's own findings against the rows read back from the history
 * and then recorded, as nightly-run.ts does. Ten steady nights on gpu01, then three on gpu02, a
 * node whose steps take 10 % longer in both arms (the ratio unchanged). Unless the spec allows a
 * node change, gpu02's nights are not judged against gpu01's: the first says so as a node-change
 * alert naming both nodes and the fix, the next two record why they were judged only against the
 * gpu02 nights, and no machine change is claimed. A spec with across_runs.allow_node_change
 * compares across the change: by the third night on gpu02 the shift is a machine change. The
 * Slurm placement and the reason are read back from the database.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { HistoryStore, NightlyRow, SlurmPlacement } from '../../history/history-store.ts';
import { openHistory } from '../../history/open-history.ts';
import { findings } from '../../orchestrator/nightly/night-findings.ts';
import type { NightlyAlert } from '../../orchestrator/nightly/nightly-alert.ts';
import { row } from '../history/nightly-row.ts';
import { BACKENDS, type Backend, freshBackend } from '../utils/history-backends.ts';

const DAY = 86_400_000;
const START = Date.UTC(2026, 2, 1, 2);
const gpu = (node: string, job: string): SlurmPlacement => ({ jobs: [job], nodes: [node], partitions: ['h200'] });
/** night-to-night noise of a steady machine, relative */
const JITTER = [0, 0.001, -0.001, 0.002, -0.002, 0.001, 0, -0.001, 0.001, 0];
const NODE_SLOWER = 1.1;

/** The nights: steady on gpu01, then three on gpu02 (both arms 10 % slower, the ratio as before). */
function night(i: number, suite: string): NightlyRow {
  const onGpu02 = i >= JITTER.length;
  const level = (onGpu02 ? NODE_SLOWER : 1) * (1 + (JITTER[i] ?? 0));
  return row({
    suite,
    scheduled_at: START + i * DAY,
    experiment: `e${i}`,
    results_dir: `/r/e${i}`,
    verdict: 'faster',
    change: -0.05,
    ci_low: -0.06,
    ci_high: -0.04,
    p_value: 0.001,
    arm_value: 1.9 * level,
    reference_value: 2 * level,
    finding: null,
    slurm: onGpu02 ? gpu('gpu02', String(200 + i)) : gpu('gpu01', String(100 + i)),
  });
}

/** Runs the nights through findings and the history, as nightly-run.ts does; the alerts of each night. */
async function runNights(
  store: HistoryStore,
  suite: string,
  count: number,
  allowed: boolean,
): Promise<NightlyAlert[][]> {
  const alerts: NightlyAlert[][] = [];
  for (let i = 0; i < count; i++) {
    const tonight = night(i, suite);
    const { run } = await store.claimRun({
      suite,
      scheduledAt: tonight.scheduled_at,
      orchVersion: null,
      orchCommit: null,
      serveHost: 'h',
    });
    const judged = findings(
      [{ ...tonight, run_id: run.id }],
      await store.rows(suite),
      undefined,
      (file) => allowed && file === tonight.spec_file,
    );
    await store.finishRun(run.id, { state: 'done', error: null, alerts: judged.alerts.length, rows: judged.rows });
    alerts.push(judged.alerts);
  }
  return alerts;
}

for (const name of BACKENDS) {
  describe(`nights across a Slurm node change on ${name}`, { timeout: 60_000 }, () => {
    let backend: Backend | null = null;
    let store: HistoryStore | null = null;
    after(async () => {
      await store?.close();
      await backend?.drop();
    });

    it('are judged only against the nights on the same nodes unless the spec allows it', async () => {
      backend = await freshBackend(name);
      store = await openHistory(backend.target);
      const nights = JITTER.length + 3;

      const refused = await runNights(store, 'pinned', nights, false);
      const rows = await store.rows('pinned');
      assert.deepEqual(
        rows.map((r) => r.finding),
        [...JITTER.map(() => null), 'node-change', null, null],
        'no machine change claimed across nodes',
      );
      assert.deepEqual(
        refused.map((a) => a.map((x) => x.kind)),
        [...JITTER.map(() => []), ['node-change'], [], []],
      );
      const [alert] = refused[JITTER.length]!;
      assert.match(alert!.text, /the Slurm nodes changed: not compared with the nights before/);
      assert.match(
        alert!.message,
        /^ran on Slurm node gpu02 \(job 210, partition h200\); the night before \(2026-03-10T02:00:00\.000Z\) on Slurm node gpu01 \(job 109, partition h200\): not compared across Slurm nodes/,
      );
      assert.match(
        alert!.message,
        /judged only against the 0 earlier nights on Slurm node gpu02 .*, 10 of the last 21 on other nodes left out — too few to judge its absolute numbers \(7 needed\); pin the nodes \(sbatch --nodelist\), or set across_runs: \{ allow_node_change: true \}/,
      );
      // the reason and the placement, as the database returns them
      assert.equal(rows[JITTER.length]!.node_change, alert!.message);
      assert.deepEqual(rows.at(-1)!.slurm, { jobs: ['212'], nodes: ['gpu02'], partitions: ['h200'] });
      assert.match(
        rows.at(-1)!.node_change ?? '',
        /^not compared across Slurm nodes .*: judged only against the 2 earlier nights on Slurm node gpu02 /,
      );
      assert.deepEqual(
        rows.slice(0, JITTER.length).map((r) => r.node_change),
        JITTER.map(() => null),
      );

      const allowed = await runNights(store, 'allowed', nights, true);
      const across = await store.rows('allowed');
      assert.deepEqual(
        across.map((r) => r.finding),
        [...JITTER.map(() => null), null, null, 'machine-change'],
      );
      assert.deepEqual(
        allowed.at(-1)!.map((a) => a.kind),
        ['machine-change'],
      );
      assert.match(
        across[JITTER.length]!.node_change ?? '',
        /the night before .* on Slurm node gpu01 .*: compared across the change, as the spec allows \(across_runs\.allow_node_change\)$/,
      );
    });
  });
}
