/**
 * `orch nightly run SUITE`: one night of an installed suite now, through a real `orch serve` and
 * worker (fixture ranks whose graph arm is planted twice as slow, FIXTURE_ARM_MS), recorded in
 * the history like a scheduled night, its exit code the night's outcome under --fail-on: the
 * regression exits 4 by default and 0 with a --fail-on that leaves slower out. A suite that is
 * not installed is refused by name. (Before, only the hidden `install --every` ran a night.)
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { HistoryStore } from '../../history/history-store.ts';
import { openHistory } from '../../history/open-history.ts';
import { EXIT_CODES } from '../../orchestrator/report/outcome-exit-code.ts';
import { type Cluster, runOrch, startCluster } from '../orchestrator/orch-cluster.ts';
import { type Backend, freshBackend } from '../utils/history-backends.ts';

describe('orch nightly run', { timeout: 240_000 }, () => {
  let backend: Backend;
  let cluster: Cluster;
  let history: HistoryStore;
  const dir = mkdtempSync(join(tmpdir(), 'orch-nightly-now-'));

  before(async () => {
    // the worker's ranks inherit it: every experiment of the night is a regression of the graph arm
    process.env.FIXTURE_ARM_MS = 'eager:5,eager_aa:5,graph:10';
    backend = await freshBackend('sqlite');
    history = await openHistory(backend.target);
    cluster = await startCluster();
    Object.assign(cluster.env, backend.env);
    copyFileSync('test/fixtures/specs/verdict-ab.yaml', join(dir, 'spec.yaml'));
    writeFileSync(
      join(dir, 'suite.yaml'),
      'kind: suite\nname: now\nschedule: { cron: "0 2 * * *" }\nexperiments: [spec.yaml]\nresults: results\n',
    );
    const inst = await runOrch(['nightly', 'install', join(dir, 'suite.yaml')], cluster.env, 30_000);
    assert.equal(inst.code, 0, inst.stderr);
    cluster.startServe();
    await cluster.startWorker({ cpuCards: 2, repMs: 0 });
  });

  after(async () => {
    await cluster?.stop();
    await history?.close();
    await backend?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("runs a night now: recorded in the history, the regression's exit code; 0 under --fail-on without slower", async () => {
    const r = await runOrch(['nightly', 'run', 'now'], cluster.env, 120_000);
    assert.equal(r.code, EXIT_CODES.slower, `${r.stdout}\n${r.stderr}`);
    assert.match(
      r.stdout,
      new RegExp(`^night \\S+ of now: done, 1 experiment\\(s\\), \\d+ alert\\(s\\); exit ${EXIT_CODES.slower}$`, 'm'),
      r.stdout,
    );
    assert.match(r.stdout, /^ {2}verdict-ab graph vs eager: slower \+/m, r.stdout);
    const lenient = await runOrch(['nightly', 'run', 'now', '--fail-on', 'invalid', '--json'], cluster.env, 120_000);
    assert.equal(lenient.code, 0, lenient.stderr);
    const out = JSON.parse(lenient.stdout) as {
      run: string;
      state: string;
      exit_code: number;
      rows: { verdict: string }[];
    };
    assert.equal(out.exit_code, 0);
    assert.ok(
      out.rows.some((x) => x.verdict === 'slower'),
      lenient.stdout,
    );
    const runs = await history.runs('now', 10);
    assert.deepEqual(
      runs.map((x) => x.state),
      ['done', 'done'],
      'both nights are in the history',
    );
    assert.ok(runs.some((x) => x.id === out.run));
  });

  it('a suite that is not installed is refused by name', async () => {
    const r = await runOrch(['nightly', 'run', 'nosuch'], cluster.env, 30_000);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /no nightly suite named "nosuch" is installed/);
  });
});
