// `orch cancel` in the middle of an experiment (real processes): the ranks are gone within a
// second of the cancel taking effect (the worker hears the cancel notice, aborts the rep in
// flight and commits what it measured), the experiment ends `cancelled`, and every planned rep
// is accounted for as measured or cancelled — in Redis and in the written results.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ProgressTracker } from '../../orchestrator/experiment/progress.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { LeaseStore } from '../../store/lease-store.ts';
import { waitFor } from '../utils/wait-for.ts';
import { isAlive as alive, type Cluster, runOrch, startCluster } from './orch-cluster.ts';

let cluster: Cluster | null = null;
after(async () => cluster?.stop());
let cluster2: Cluster | null = null;
after(async () => cluster2?.stop());

test('orch cancel mid-run: ranks die within a second, experiment cancelled, every rep accounted for', async () => {
  cluster = await startCluster();
  const c = cluster;
  c.startServe();
  await c.startWorker({ cpuCards: 2, repMs: 4000 });
  const sub = await runOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml', '--no-wait'], c.env);
  assert.equal(sub.code, 0, sub.stderr);
  const id = sub.stdout.trim();
  const store = new ExperimentStore(c.redis, c.prefix);
  await waitFor(
    'a rep measured while two blocks run',
    async () => {
      const running = (await store.blocks(id)).filter((b) => b.phase === 'running').length;
      return (
        running === 2 && (await c.redis.xlen(`${c.prefix}:experiment:${id}:events`)) > 0 && c.rankLog().length >= 2
      );
    },
    { timeoutMs: 40_000, intervalMs: 20 },
  );
  const ranks = c
    .rankLog()
    .filter((e) => e.ev === 'start')
    .map((e) => e.pid);
  assert.equal(ranks.length, 2);
  assert.ok(ranks.every(alive));

  const cancel = runOrch(['cancel', id, '--json'], c.env);
  // From the moment the cancel takes effect (the state flips, then the leases are revoked)...
  let done: Awaited<typeof cancel> | null = null;
  void cancel.then((x) => (done = x));
  const effective = await waitFor(
    'cancel took effect',
    async () => {
      if (done) throw new Error(`orch cancel exited ${done.code} before the state flipped: ${done.stderr}`);
      const s = await store.state(id);
      assert.notEqual(s, 'done', 'the experiment ended before the cancel: make its reps longer');
      return s === 'cancelling' || s === 'cancelled' ? Date.now() : null;
    },
    { timeoutMs: 40_000, intervalMs: 5 },
  );
  const goneAt = await waitFor('ranks gone', () => (ranks.every((p) => !alive(p)) ? Date.now() : null), {
    timeoutMs: 10_000,
    intervalMs: 5,
  });
  console.log(`ranks gone ${goneAt - effective} ms after the cancel took effect`);
  assert.ok(goneAt - effective < 1000, `ranks took ${goneAt - effective} ms to die`);

  const r = await cancel;
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { state: string; stopped_gangs: number };
  assert.equal(out.state, 'cancelled');
  assert.equal(out.stopped_gangs, 2);
  const blocks = await store.blocks(id);
  assert.deepEqual(
    blocks.map((b) => b.phase),
    ['cancelled', 'cancelled', 'cancelled'],
  );

  const rep = await runOrch(['report', id, '--json', '--results', `${c.fixtureLog}.results`], c.env);
  const report = JSON.parse(rep.stdout) as {
    state: string;
    accounting: {
      planned: number;
      measured: number;
      not_run: number;
      cancelled: number;
      unaccounted: string[];
      not_run_reasons: Record<string, number>;
    };
  };
  assert.equal(report.state, 'cancelled');
  const a = report.accounting;
  console.log(`accounting: ${JSON.stringify(a)}`);
  assert.equal(a.planned, 12);
  assert.deepEqual(a.unaccounted, []);
  assert.equal(a.measured + a.cancelled, 12);
  assert.equal(a.not_run, 0, 'a cancelled rep is cancelled, not "not run"');
  assert.ok(a.cancelled >= 4, 'the waiting block and the rest of the running ones were cancelled');
});

// The user's case: a cancel part-way through a long block keeps every rep measured before it.
// Before cancel notices the cancel revoked the gang first, so the block's one commit was refused
// by the epoch fence and all of them were dropped (0 measured, every rep "not run").
test('orch cancel after some reps of a long block: those reps stay measured, the rest are cancelled, one report line per arm', async () => {
  cluster2 = await startCluster();
  const c = cluster2;
  c.startServe();
  await c.startWorker({ cpuCards: 1, repMs: 150 });
  const dir = mkdtempSync(join(tmpdir(), 'orch-cancel-'));
  const specFile = join(dir, 'long-block.yaml');
  // one block of 2 arms × 40 reps: 80 reps of ~150 ms, far longer than the test waits
  writeFileSync(
    specFile,
    readFileSync('test/fixtures/specs/tiny-ab.yaml', 'utf8')
      .replace(/^reps: 2$/m, 'reps: 40')
      .replace(/count: 3/, 'count: 1'),
  );
  const sub = await runOrch(['submit', specFile, '--no-wait'], c.env);
  assert.equal(sub.code, 0, sub.stderr);
  const id = sub.stdout.trim();
  const store = new ExperimentStore(c.redis, c.prefix);
  const exp = await store.get(id);
  assert.ok(exp);
  assert.equal(exp.plan.blocks[0]?.sequence.length, 80);
  const conn = c.redis.duplicate();
  after(() => conn.disconnect());
  const tracker = new ProgressTracker(conn, c.prefix, exp);
  await waitFor(
    '3 reps measured',
    async () => {
      await tracker.poll(10);
      const b = (await tracker.snapshot()).blocks[0];
      assert.notEqual(b?.phase, 'done', 'the block ended before the cancel: make it longer');
      return (b?.done ?? 0) >= 3;
    },
    { timeoutMs: 60_000, intervalMs: 20 },
  );
  const ranks = c
    .rankLog()
    .filter((e) => e.ev === 'start')
    .map((e) => e.pid);
  assert.equal(ranks.length, 1);

  const r = await runOrch(['cancel', id, '--json'], c.env);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { state: string; stopped_gangs: number };
  assert.equal(out.state, 'cancelled');

  // no rank left, every card free
  await waitFor('ranks gone', () => ranks.every((p) => !alive(p)), { timeoutMs: 10_000 });
  const leases = await new LeaseStore(c.redis, { prefix: c.prefix }).held(['cpu:0@h1']);
  assert.deepEqual(leases, []);
  const st = await runOrch(['status', id, '--json'], c.env);
  assert.equal(st.code, 0, st.stderr);
  const status = JSON.parse(st.stdout) as {
    cards: { id: string; holder: unknown }[];
    experiments: { state: string; measured: number; planned: number }[];
  };
  assert.ok(
    status.cards.length > 0 && status.cards.every((card) => card.holder === null),
    JSON.stringify(status.cards),
  );
  const e = status.experiments[0]!;
  assert.equal(e.state, 'cancelled');
  assert.equal(e.planned, 80);
  assert.ok(e.measured >= 3, `status counts ${e.measured} measured; at least 3 were measured before the cancel`);
  assert.ok(e.measured < 80, 'the block was cut short');
  const measured = e.measured;
  assert.equal(out.stopped_gangs, 1);

  // watch: the ended block shows what was measured
  const progress = await tracker.snapshot();
  assert.equal(progress.blocks[0]?.phase, 'cancelled');
  assert.equal(progress.blocks[0]?.done, measured);

  const results = join(dir, 'results');
  const rep = await runOrch(['report', id, '--json', '--results', results], c.env);
  const report = JSON.parse(rep.stdout) as {
    accounting: { planned: number; measured: number; not_run: number; cancelled: number; unaccounted: string[] };
  };
  assert.deepEqual(
    { ...report.accounting, not_run_reasons: undefined, cancelled_reasons: undefined, reps: undefined },
    {
      planned: 80,
      measured,
      not_run: 0,
      cancelled: 80 - measured,
      stopped: 0,
      unaccounted: [],
      not_run_reasons: undefined,
      cancelled_reasons: undefined,
      reps: undefined,
    },
  );
  // summary.json: every rep's fate, for scripts
  const summary = JSON.parse(readFileSync(join(results, id, 'summary.json'), 'utf8')) as {
    accounting: { reps: Record<string, { fate: string; reason?: string }> };
  };
  const fates = Object.values(summary.accounting.reps);
  assert.equal(fates.length, 80);
  assert.equal(fates.filter((f) => f.fate === 'measured').length, measured);
  assert.equal(fates.filter((f) => f.fate === 'cancelled' && /cancel/.test(f.reason ?? '')).length, 80 - measured);

  // report.md: the cancelled reps in one line per arm, never one line per rep or per pair
  const md = readFileSync(join(results, id, 'report.md'), 'utf8');
  const lines = md.split('\n');
  const perArm = lines.filter((l) => /^- arm (eager|graph): \d+ measured, \d+ cancelled/.test(l));
  assert.equal(perArm.length, 2, md);
  const counts = perArm.map((l) =>
    l
      .match(/(\d+) measured, (\d+) cancelled/)!
      .slice(1)
      .map(Number),
  );
  assert.equal(
    counts.reduce((s, [m]) => s + m!, 0),
    measured,
  );
  assert.equal(
    counts.reduce((s, [, k]) => s + k!, 0),
    80 - measured,
  );
  assert.equal(
    lines.filter((l) => /cancel/i.test(l) && /\bb?0\/(eager|graph)\/\d+|pair \d+/.test(l)).length,
    0,
    'no cancelled rep or pair on a line of its own',
  );
  assert.ok(md.length < 8000, `report.md is ${md.length} bytes`);
});
