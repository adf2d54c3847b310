/**
 * Nothing read back from Redis is trusted to run (orchestrator/nightly/rerun-refusal.ts): a night
 * ran its spec and its attempt stopped before judging it; someone who can write to Redis then
 * changed the experiment's stored spec (another command); the attempt that takes the night over
 * finds the experiment slower, suspects a regression and would run it again to confirm it. The
 * confirmation must refuse the changed record: the planted command never runs, no experiment is
 * registered for it, and the regression is still alerted, naming the mismatch. A real
 * redis-server, `orch serve` and `orch worker`, the night run by runNight against SQLite.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { type HistoryStore, runId } from '../../history/history-store.ts';
import { openHistory } from '../../history/open-history.ts';
import { awaitResults } from '../../orchestrator/experiment/run-experiment.ts';
import { submitExperiment } from '../../orchestrator/experiment/submit.ts';
import type { NightlyAlert } from '../../orchestrator/nightly/nightly-alert.ts';
import { runNight } from '../../orchestrator/nightly/nightly-run.ts';
import { loadSpec } from '../../orchestrator/spec/load-spec.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { orchKeys } from '../../store/keys.ts';
import { NightlyClaims } from '../../store/nightly-claims.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { type Cluster, startCluster } from '../orchestrator/orch-cluster.ts';
import { type Backend, freshBackend } from '../utils/history-backends.ts';

const STEPS = join(process.cwd(), 'test/fixtures/cmd-nightly/steps.sh');

function spec(msFile: string, cmd: string): string {
  return `name: stored-record
design: ab
workload:
  runtime: command
  run:
    cmd: ${cmd}
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
gates: { identity: false, aa: false }
metric: { name: ms, better: lower }
`;
}

describe('a nightly confirmation of a record changed in Redis', { timeout: 180_000 }, () => {
  let backend: Backend;
  let server: RedisServerProcess;
  let cluster: Cluster;
  let history: HistoryStore;
  let dir: string;

  before(async () => {
    backend = await freshBackend('sqlite');
    history = await openHistory(backend.target);
    server = await startRedisServer();
    cluster = await startCluster(server);
    cluster.startServe();
    await cluster.startWorker({ cpuCards: 1, repMs: 1 });
    dir = mkdtempSync(join(tmpdir(), 'orch-confirm-stored-'));
  });

  after(async () => {
    await history?.close();
    await cluster?.stop();
    await backend?.drop();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('is never run: the planted command does not run, nothing is submitted, and the regression alert names the mismatch', async () => {
    const { redis, prefix } = cluster;
    const msFile = join(dir, 'ms.txt');
    // the candidate twice as slow: a regression the night cannot miss
    writeFileSync(msFile, 'control 2\ncandidate 4\n');
    const file = join(dir, 'candidate.yaml');
    writeFileSync(file, spec(msFile, `sh ${STEPS}`));
    const marker = join(dir, 'planted-command-ran');
    const planted = join(dir, 'planted.sh');
    writeFileSync(planted, `touch ${marker}\nexec sh ${STEPS}\n`);

    // The first attempt: claims the night, records and submits the experiment, then stops.
    const at = Date.UTC(2030, 0, 1, 2);
    const suite = 'stored';
    assert.ok(await new NightlyClaims(redis, prefix).claim(suite, at, 'a-stopped-attempt'));
    const { run } = await history.claimRun({
      suite,
      scheduledAt: at,
      orchVersion: null,
      orchCommit: null,
      serveHost: 'serve.example',
    });
    const exps = new ExperimentStore(redis, prefix);
    const loaded = loadSpec(file);
    const id = await exps.newId(loaded.spec.name);
    await history.setExperiments(run.id, [{ file, experiment: id }]);
    await submitExperiment({ redis, prefix, loaded, id });
    await awaitResults(redis, prefix, id, { resultsRoot: join(dir, 'first-results') });

    // After the night ran, its stored spec is changed in Redis: another command, same hash.
    const key = orchKeys(prefix).exp(id);
    const stored = JSON.parse((await redis.hget(key, 'spec_json'))!) as { workload: { run: { cmd: string } } };
    stored.workload.run.cmd = `sh ${planted}`;
    await redis.hset(key, 'spec_json', JSON.stringify(stored), 'spec', spec(msFile, `sh ${planted}`));

    const alerts: NightlyAlert[] = [];
    const outcome = await runNight(
      {
        redis,
        prefix,
        history,
        log: pino({ level: 'silent' }),
        resultsRoot: join(dir, 'results'),
        heartbeatMs: 200,
        send: async (a) => void alerts.push(a),
      },
      { suite, file: join(dir, 'suite.yaml'), experiments: [file], results: join(dir, 'results') },
      at,
    );

    assert.equal(outcome.claimed, false, 'the night was taken over, not claimed again');
    const suspect = outcome.rows.find((r) => r.experiment === id && r.arm === 'candidate');
    assert.equal(suspect?.verdict, 'slower', JSON.stringify(outcome.rows));
    assert.equal(suspect?.finding, 'regression', 'the regression stands: not silently unconfirmed');
    assert.ok(!existsSync(marker), 'the planted command ran');
    assert.deepEqual(
      await exps.list(),
      [id],
      "only the night's own experiment is registered: no confirmation was submitted",
    );
    const regression = alerts.filter((a) => a.kind === 'regression');
    assert.equal(regression.length, 1, JSON.stringify(alerts.map((a) => a.text)));
    assert.match(
      regression[0]!.text,
      new RegExp(
        `NOT confirmed: .*stored record changed since the night ran: experiment ${id} in Redis: its submit signature does not verify`,
      ),
    );
    assert.equal((await history.run(runId(suite, at)))!.state, 'failed');
  });
});
