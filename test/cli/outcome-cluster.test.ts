// On a cluster (orch serve and a worker of fixture ranks, real processes): `orch submit`, `orch
// watch` and `orch report` give one experiment's outcome the same exit code — a planted
// regression (FIXTURE_ARM_MS: the graph arm twice as slow) exits 4, or 0 under a --fail-on that
// leaves slower out; a cancelled run exits 9 from all three (watch exited 0 for it) and its report
// is headed CANCELLED, never SLOWER from the partial data it measured (it was, and exited 4).

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cancelExperiment } from '../../orchestrator/experiment/cancel.ts';
import { EXIT_CODES } from '../../orchestrator/report/outcome-exit-code.ts';
import { type Cluster, runOrch, spawnOrch, startCluster } from '../orchestrator/orch-cluster.ts';
import { waitFor } from '../utils/wait-for.ts';

const SPEC = 'test/fixtures/specs/verdict-ab.yaml';
let cluster: Cluster;
const dir = mkdtempSync(join(tmpdir(), 'orch-outcome-cluster-'));

before(async () => {
  // the worker's ranks read it from the environment the worker inherits: every experiment here is a regression
  process.env.FIXTURE_ARM_MS = 'eager:5,eager_aa:5,graph:10';
  cluster = await startCluster();
  cluster.startServe();
  await cluster.startWorker({ cpuCards: 2, repMs: 600 });
});
after(async () => {
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('outcome exit codes on a cluster', () => {
  it('slower: submit, watch and report exit 4; 0 with a --fail-on without slower', async () => {
    const c = cluster;
    const sub = await runOrch(['submit', SPEC, '--no-wait'], c.env);
    assert.equal(sub.code, 0, sub.stderr);
    const id = sub.stdout.trim();
    const watch = await runOrch(['watch', id], c.env, 120_000);
    assert.equal(watch.code, EXIT_CODES.slower, watch.stderr);
    assert.match(watch.stdout, new RegExp(`experiment ${id} ended done: slower \\(exit ${EXIT_CODES.slower}\\)`));
    const lenient = await runOrch(['watch', id, '--fail-on', 'invalid', '--json'], c.env);
    assert.equal(lenient.code, 0, lenient.stderr);
    assert.deepEqual(JSON.parse(lenient.stdout.trim().split('\n').at(-1)!), {
      experiment: id,
      state: 'done',
      verdict: 'slower',
      exit_code: 0,
    });
    const report = await runOrch(['report', id, '--results', dir], c.env);
    assert.equal(report.code, EXIT_CODES.slower, report.stderr);
    const waited = await runOrch(['submit', SPEC, '--results', dir, '--json'], c.env, 120_000);
    assert.equal(JSON.parse(waited.stdout).verdict, 'slower', waited.stderr);
    assert.equal(waited.code, EXIT_CODES.slower, waited.stderr);
  });

  it('cancelled: submit, watch and report exit 9; the report is headed CANCELLED with no verdict', async () => {
    const c = cluster;
    const submitting = spawnOrch(['submit', SPEC, '--results', dir], c.env);
    const id = await waitFor('submitted', () => /^experiment (\S+) \(spec /m.exec(submitting.out())?.[1] ?? null, {
      timeoutMs: 30_000,
      intervalMs: 20,
    });
    const watching = spawnOrch(['watch', id], c.env);
    await waitFor('a rep measured', async () => (await c.redis.xlen(`${c.prefix}:experiment:${id}:events`)) > 0, {
      timeoutMs: 40_000,
      intervalMs: 20,
    });
    // orch cancel's own work, from here: a process started now could come after the experiment's end on a loaded machine
    const cancel = await cancelExperiment(c.redis, c.prefix, id, 'cancelled by the test');
    assert.equal(cancel.state, 'cancelling', 'the experiment ended before the cancel: make its reps longer');
    const [sub, watch] = await Promise.all([submitting.exited, watching.exited]);
    assert.equal(sub.code, EXIT_CODES.cancelled, submitting.out());
    assert.equal(watch.code, EXIT_CODES.cancelled, watching.out());
    // --fail-on none lets no speed outcome fail, and a cancelled run still does
    const report = await runOrch(['report', id, '--results', dir, '--fail-on', 'none'], c.env);
    assert.equal(report.code, EXIT_CODES.cancelled, report.stderr);
    assert.match(report.stdout, /^# \S+: CANCELLED$/m, report.stdout);
    assert.match(
      report.stdout,
      /\*\*Cancelled — no verdict: the plan did not run to its end, and partial data decides nothing\.\*\* cancelled by the test/,
    );
    assert.doesNotMatch(report.stdout, /SLOWER/);
    assert.equal(JSON.parse(readFileSync(join(dir, id, 'report.json'), 'utf8')).verdict, 'cancelled');
  });
});
