// `orch cancel` in the middle of an experiment (real processes): the ranks are gone within a
// second of the cancel taking effect (the leases revoked; the worker hears it on the revoke
// channel), the experiment ends `cancelled`, and every planned rep is accounted for as measured
// or not run — in Redis and in the written results.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { waitFor } from '../utils/wait-for.ts';
import { runOrch, startCluster, type Cluster, isAlive as alive } from './orch-cluster.ts';

let cluster: Cluster | null = null;
after(async () => cluster?.stop());


test('orch cancel mid-run: ranks die within a second, experiment cancelled, every rep accounted for', async () => {
  cluster = await startCluster();
  const c = cluster;
  c.startServe();
  await c.startWorker({ cpuCards: 2, repMs: 4000 });
  const sub = await runOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml', '--no-wait'], c.env);
  assert.equal(sub.code, 0, sub.stderr);
  const id = sub.stdout.trim();
  const store = new ExperimentStore(c.redis, c.prefix);
  await waitFor('a rep measured while two blocks run', async () => {
    const running = (await store.blocks(id)).filter((b) => b.phase === 'running').length;
    return running === 2 && (await c.redis.xlen(`${c.prefix}:experiment:${id}:events`)) > 0 && c.rankLog().length >= 2;
  }, { timeoutMs: 40_000, intervalMs: 20 });
  const ranks = c.rankLog().filter((e) => e.ev === 'start').map((e) => e.pid);
  assert.equal(ranks.length, 2);
  assert.ok(ranks.every(alive));

  const cancel = runOrch(['cancel', id, '--json'], c.env);
  // From the moment the cancel takes effect (the state flips, then the leases are revoked)...
  let done: Awaited<typeof cancel> | null = null;
  void cancel.then((x) => (done = x));
  const effective = await waitFor('cancel took effect', async () => {
    if (done) throw new Error(`orch cancel exited ${done.code} before the state flipped: ${done.stderr}`);
    const s = await store.state(id);
    assert.notEqual(s, 'done', 'the experiment ended before the cancel: make its reps longer');
    return s === 'cancelling' || s === 'cancelled' ? Date.now() : null;
  }, { timeoutMs: 40_000, intervalMs: 5 });
  const goneAt = await waitFor('ranks gone', () => (ranks.every((p) => !alive(p)) ? Date.now() : null), { timeoutMs: 10_000, intervalMs: 5 });
  console.log(`ranks gone ${goneAt - effective} ms after the cancel took effect`);
  assert.ok(goneAt - effective < 1000, `ranks took ${goneAt - effective} ms to die`);

  const r = await cancel;
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { state: string; revoked_leases: number };
  assert.equal(out.state, 'cancelled');
  assert.equal(out.revoked_leases, 2);
  const blocks = await store.blocks(id);
  assert.deepEqual(blocks.map((b) => b.phase), ['cancelled', 'cancelled', 'cancelled']);

  const rep = await runOrch(['report', id, '--json', '--results', `${c.fixtureLog}.results`], c.env);
  const report = JSON.parse(rep.stdout) as { state: string; accounting: { planned: number; measured: number; not_run: number; unaccounted: string[]; not_run_reasons: Record<string, number> } };
  assert.equal(report.state, 'cancelled');
  const a = report.accounting;
  console.log(`accounting: ${JSON.stringify(a)}`);
  assert.equal(a.planned, 12);
  assert.deepEqual(a.unaccounted, []);
  assert.equal(a.measured + a.not_run, 12);
  assert.ok(a.not_run >= 4, 'the waiting block and the rest of the running ones did not run');
  assert.ok(Object.keys(a.not_run_reasons).every((why) => /cancel|not run/i.test(why)), JSON.stringify(a.not_run_reasons));
});
