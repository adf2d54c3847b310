/**
 * A rank that adopts a process prepared before its lease (worker/command/resident-command-rank.ts
 * adopt) waits, holding its card, for that process's prepare() to end. That wait had no deadline
 * and nothing could end it: a prepare() that hung held a leased card for ever, and a rank ended
 * meanwhile (cancel, a lost lease) never reported its exit, so its block job never ended. Now the
 * wait is bounded by workload.run.hello_timeout_s (prepared-slots.ts preparedWithin; the build
 * phase's wait too) and a rank ended while it waits ends the prepared process at once. Real
 * processes: `orch serve`, `orch worker`, `orch submit` and `orch cancel` against a real
 * redis-server, test/fixtures/ranks/startup-rank.py sleeping in prepare().
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, test } from 'node:test';
import { type Cluster, isAlive, runOrch, startServeAndWorker } from '../orchestrator/orch-cluster.ts';
import { preparingFixtureRanks } from '../utils/preparing-ranks.ts';
import { slowStartSpec } from '../utils/slow-start-spec.ts';
import { waitFor } from '../utils/wait-for.ts';

let cluster: Cluster | null = null;
afterEach(async () => {
  await cluster?.stop();
  cluster = null;
});

async function clusterWithOneCard(): Promise<Cluster> {
  cluster = await startServeAndWorker({ cpuCards: 1, repMs: 0 });
  return cluster;
}

test('a prepare() that runs past hello_timeout_s is ended, and the block fails with the reason instead of holding its card', {
  timeout: 120_000,
}, async () => {
  const c = await clusterWithOneCard();
  const file = join(c.fixtureLog, '..', 'prepare-hangs.yaml');
  writeFileSync(
    file,
    slowStartSpec('prepare-hangs', {
      prepareS: 600,
      setupS: 0,
      helloTimeoutS: 3,
      tail: 'reps: 2\nblocks: { count: 1 }\n',
    }),
  );
  const before = new Set(preparingFixtureRanks());
  const started = Date.now();
  const r = await runOrch(['submit', file], c.env, 60_000);
  assert.equal(r.code, 8, `orch submit did not end failed within 60 s (code ${r.code}): ${r.stderr.slice(-2000)}`);
  assert.match(r.stdout, /no hello within 3000 ms/);
  console.log(`failed with its reason ${Date.now() - started} ms after the submit`);
  assert.deepEqual(
    preparingFixtureRanks().filter((p) => !before.has(p)),
    [],
    'no prepared process is left running',
  );
});

test("cancelled while its rank waits for the prepared process's prepare(): that process ends at once", {
  timeout: 120_000,
}, async () => {
  const c = await clusterWithOneCard();
  const file = join(c.fixtureLog, '..', 'adopt-cancel.yaml');
  // blocks 0 and 1's processes prepare in the build phase (one card, three blocks: block 1's in the
  // card's spare slot); block 2's starts beside block 1's setup() and is still preparing (20 s)
  // when block 2 is granted a few seconds later and its rank adopts it
  writeFileSync(
    file,
    slowStartSpec('adopt-cancel', {
      prepareS: 20,
      setupS: 0,
      tail: 'reps: 2\nblocks: { count: 3, reps_per_block: 2 }\n',
    }),
  );
  const before = new Set(preparingFixtureRanks());
  const sub = await runOrch(['submit', file, '--no-wait'], c.env);
  assert.equal(sub.code, 0, sub.stderr);
  const id = sub.stdout.trim();
  const seen: number[] = [];
  const next = await waitFor(
    "block 2's process preparing after blocks 0 and 1 ended",
    () => {
      for (const p of preparingFixtureRanks()) if (!before.has(p) && !seen.includes(p)) seen.push(p);
      const [first, second, third] = seen;
      return first !== undefined && second !== undefined && third !== undefined && !isAlive(first) && !isAlive(second)
        ? third
        : null;
    },
    { timeoutMs: 90_000, intervalMs: 50 },
  );
  // block 2's grant and its rank's adopt() follow block 1's commit within a second or so
  await new Promise((r) => setTimeout(r, 2_000));
  assert.ok(isAlive(next), "block 2's process ended before the cancel: its prepare() was not waited on");
  const cancel = await runOrch(['cancel', id], c.env);
  assert.equal(cancel.code, 0, cancel.stderr);
  const cancelledAt = Date.now();
  await waitFor('the adopted process ended', () => !isAlive(next), { timeoutMs: 5_000, intervalMs: 50 }).catch(
    (err: Error) => {
      throw new Error(`${err.message}: pid ${next} still alive ${Date.now() - cancelledAt} ms after the cancel`);
    },
  );
  console.log(`the process being adopted ended ${Date.now() - cancelledAt} ms after orch cancel returned`);
});
