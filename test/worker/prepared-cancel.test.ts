/**
 * A rank process prepared before its lease (the build phase's host phase,
 * worker/command/prepare-first.ts) ends with its experiment: cancelled while its prepare() still
 * runs, the process is gone within a few of the worker's heartbeats (worker/worker.ts
 * dropEndedPrepared), not at its slot's keep time of five minutes — a prepare() may hold gigabytes
 * of weights in host memory. Real processes: `orch serve`, `orch worker`, `orch submit` and
 * `orch cancel` against a real redis-server.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { type Cluster, runOrch, startServeAndWorker } from '../orchestrator/orch-cluster.ts';
import { preparingFixtureRanks } from '../utils/preparing-ranks.ts';
import { slowStartSpec } from '../utils/slow-start-spec.ts';
import { waitFor } from '../utils/wait-for.ts';

let cluster: Cluster | null = null;
after(async () => cluster?.stop());

test('cancelled while its first rank prepares before any lease: the prepared process is ended within a few heartbeats', {
  timeout: 120_000,
}, async () => {
  cluster = await startServeAndWorker({ cpuCards: 1, repMs: 0 });
  const c = cluster;
  const file = join(c.fixtureLog, '..', 'prepared-cancel.yaml');
  writeFileSync(
    file,
    slowStartSpec('prepared-cancel', {
      prepareS: 90,
      setupS: 0,
      helloTimeoutS: 120,
      tail: 'reps: 2\nblocks: { count: 2 }\n',
    }),
  );
  const before = new Set(preparingFixtureRanks());
  const sub = await runOrch(['submit', file, '--no-wait'], c.env);
  assert.equal(sub.code, 0, sub.stderr);
  const id = sub.stdout.trim();
  const pids = await waitFor(
    "the first block's rank preparing in the build phase",
    () => {
      const now = preparingFixtureRanks().filter((p) => !before.has(p));
      return now.length > 0 ? now : null;
    },
    { timeoutMs: 30_000, intervalMs: 50 },
  );
  const cancel = await runOrch(['cancel', id], c.env);
  assert.equal(cancel.code, 0, cancel.stderr);
  const cancelledAt = Date.now();
  const alive = (p: number) => {
    try {
      process.kill(p, 0);
      return true;
    } catch {
      return false;
    }
  };
  // the worker beats every second (orch-cluster.ts): three beats and some slack
  await waitFor('the prepared process ended', () => pids.every((p) => !alive(p)), {
    timeoutMs: 6_000,
    intervalMs: 50,
  }).catch((err: Error) => {
    throw new Error(
      `${err.message}: pids ${pids.join(', ')} still alive ${Date.now() - cancelledAt} ms after the cancel`,
    );
  });
  console.log(`prepared process ended ${Date.now() - cancelledAt} ms after orch cancel returned`);
});
