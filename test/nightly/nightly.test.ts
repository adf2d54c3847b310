/**
 * Nightly suites end to end: `orch nightly install|list|remove` against a real redis-server
 * (BullMQ job schedulers on queue `nightly`), and a real `orch serve` that runs a suite installed
 * with a 500 ms interval: each spec is submitted through the ordinary submit path (the experiment
 * appears in Redis with its spec hash and in the history run); a spec that became invalid fails
 * the run with its error and is recorded as a not-run row while the other spec is still
 * submitted. No worker: the test cancels each submitted experiment, so every night ends (as a
 * failed night: its experiments were cancelled). The regression loop with a worker is
 * nightly-regression.test.ts.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Queue } from 'bullmq';
import { openHistory } from '../../history/open-history.ts';
import { cancelExperiment } from '../../orchestrator/experiment/cancel.ts';
import type { NightlyResult } from '../../orchestrator/nightly/nightly-processor.ts';
import type { NightlyJobData } from '../../orchestrator/nightly/nightly-suites.ts';
import { orchProvenance } from '../../orchestrator/report/orch-provenance.ts';
import { loadSpec } from '../../orchestrator/spec/load-spec.ts';
import { type Cluster, runOrch, startCluster } from '../orchestrator/orch-cluster.ts';
import { waitFor } from '../utils/wait-for.ts';

const SPECS = ['ab.yaml', 'capture-probe.yaml'];

function writeSuite(dir: string, name: string, experiments: string[]): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    `kind: suite\nname: ${name}\nschedule:\n  cron: "0 2 * * *"\n  tz: Europe/Berlin\nexperiments:\n${experiments.map((e) => `  - ${e}\n`).join('')}`,
  );
  return file;
}

describe('orch nightly', { timeout: 60_000 }, () => {
  let cluster: Cluster;
  let queue: Queue<NightlyJobData, NightlyResult>;
  let dir: string;

  before(async () => {
    cluster = await startCluster();
    queue = new Queue('nightly', { connection: cluster.redis, prefix: cluster.prefix });
    dir = mkdtempSync(join(tmpdir(), 'orch-nightly-'));
    cluster.env.ORCH_HISTORY_DB = join(dir, 'history.sqlite');
    for (const s of SPECS) copyFileSync(join('configs', s), join(dir, s));
  });

  after(async () => {
    try {
      await queue?.close();
    } finally {
      await cluster?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
  });

  it('install registers one scheduler with the cron and time zone; install again upserts; remove removes', {
    timeout: 30_000,
  }, async () => {
    const suite = writeSuite(dir, 'nightly-a', SPECS);
    for (let i = 0; i < 2; i++) {
      const r = await runOrch(['nightly', 'install', suite], cluster.env, 20_000);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /installed nightly-a: "0 2 \* \* \*" Europe\/Berlin/);
    }
    const schedulers = await queue.getJobSchedulers(0, -1, true);
    assert.equal(schedulers.length, 1, JSON.stringify(schedulers));
    assert.equal(schedulers[0]!.key, 'nightly-a');
    assert.equal(schedulers[0]!.pattern, '0 2 * * *');
    assert.equal(schedulers[0]!.tz, 'Europe/Berlin');
    assert.deepEqual(
      schedulers[0]!.template?.data?.experiments,
      SPECS.map((s) => join(dir, s)),
    );

    const list = await runOrch(['nightly', 'list', '--json'], cluster.env, 20_000);
    assert.equal(list.code, 0, list.stderr);
    assert.deepEqual(
      JSON.parse(list.stdout).map((s: { name: string; cron: string; tz: string }) => [s.name, s.cron, s.tz]),
      [['nightly-a', '0 2 * * *', 'Europe/Berlin']],
    );

    const rm = await runOrch(['nightly', 'remove', 'nightly-a'], cluster.env, 20_000);
    assert.equal(rm.code, 0, rm.stderr);
    assert.equal((await queue.getJobSchedulers()).length, 0);
    const again = await runOrch(['nightly', 'remove', 'nightly-a'], cluster.env, 20_000);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /no nightly suite named "nightly-a"/);
  });

  it('a suite naming a missing spec is refused at install with the file and path (exit 2, nothing written)', {
    timeout: 20_000,
  }, async () => {
    const suite = writeSuite(dir, 'nightly-bad', [SPECS[0]!, 'missing.yaml']);
    const r = await runOrch(['nightly', 'install', suite], cluster.env, 20_000);
    assert.equal(r.code, 2, r.stderr);
    assert.ok(r.stderr.includes(`${suite}:`), r.stderr);
    assert.match(r.stderr, /experiments\[1\].*no such file "missing\.yaml"/);
    assert.equal((await queue.getJobSchedulers()).length, 0);
  });

  it('orch serve runs the suite: every spec submitted with its hash; a spec that became invalid fails the run, the other is still submitted', {
    timeout: 40_000,
  }, async () => {
    const suite = writeSuite(dir, 'nightly-run', SPECS);
    const installed = await runOrch(['nightly', 'install', suite, '--every', '500'], cluster.env, 20_000);
    assert.equal(installed.code, 0, installed.stderr);
    const serve = cluster.startServe();
    const history = await openHistory({ url: null, file: cluster.env.ORCH_HISTORY_DB! });
    // No worker runs them: each submitted experiment is cancelled, so each night can end.
    let cancelling = true;
    const canceller = (async () => {
      while (cancelling) {
        for (const run of await history.runs('nightly-run', 5)) {
          if (run.state === 'running')
            for (const e of run.experiments)
              await cancelExperiment(cluster.redis, cluster.prefix, e.experiment).catch(() => undefined);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    try {
      const first = await waitFor(
        'a recorded night',
        async () => (await history.runs('nightly-run', 50)).find((r) => r.state !== 'running'),
        { timeoutMs: 20_000, intervalMs: 100 },
      );
      assert.deepEqual(
        first.experiments.map((s) => s.file),
        SPECS.map((s) => join(dir, s)),
      );
      for (const s of first.experiments) {
        const exp = await cluster.redis.hgetall(`${cluster.prefix}:experiment:${s.experiment}`);
        assert.equal(exp.hash, loadSpec(s.file).hash, `experiment ${s.experiment} of ${s.file}`);
        assert.equal(exp.file, s.file);
      }
      assert.equal(first.state, 'failed');
      // which orch ran it: its commit, and whether that checkout had uncommitted changes
      const prov = orchProvenance();
      assert.deepEqual(
        [first.orch_version, first.orch_commit, first.orch_dirty],
        [prov.version, prov.commit, prov.dirty],
      );
      assert.equal(typeof first.orch_dirty, prov.commit === null ? 'object' : 'boolean');
      assert.deepEqual(
        (await history.rows('nightly-run')).filter((r) => r.run_id === first.id).map((r) => r.experiment_state),
        ['cancelled', 'cancelled'],
      );

      // Break one spec after install (atomically: a run never reads half a file): validated again at run time.
      writeFileSync(join(dir, 'ab.yaml.tmp'), 'name: broken\ndesign: ab\nrepz: 3\n');
      renameSync(join(dir, 'ab.yaml.tmp'), join(dir, 'ab.yaml'));
      const failed = await waitFor('a failed suite run', async () => (await queue.getJobs(['failed'], 0, 0))[0], {
        timeoutMs: 20_000,
        intervalMs: 100,
      });
      assert.match(failed.failedReason, /^suite nightly-run \(.*\): 1 of 2 specs not submitted \(submitted: \S+\)/);
      assert.ok(failed.failedReason.includes(`${join(dir, 'ab.yaml')}:`), failed.failedReason);
      assert.match(failed.failedReason, /repz/);
      const submittedId = /submitted: (\S+)\)/.exec(failed.failedReason)![1]!;
      const exp = await cluster.redis.hgetall(`${cluster.prefix}:experiment:${submittedId}`);
      assert.equal(exp.file, join(dir, 'capture-probe.yaml'));
      assert.equal(exp.hash, loadSpec(join(dir, 'capture-probe.yaml')).hash);
      // The night is in the history as failed, the broken spec's row carrying its error.
      const night = (await history.runs('nightly-run', 50)).find((r) =>
        r.experiments.some((e) => e.experiment === submittedId),
      )!;
      assert.equal(night.state, 'failed');
      const notRun = (await history.rows('nightly-run')).find(
        (r) => r.run_id === night.id && r.experiment_state === 'not-run',
      )!;
      assert.equal(notRun.spec_file, join(dir, 'ab.yaml'));
      assert.match(notRun.error ?? '', /repz/);
    } finally {
      cancelling = false;
      await canceller;
      await queue.removeJobScheduler('nightly-run');
      serve.child.kill('SIGTERM');
      await history.close();
    }
  });
});
