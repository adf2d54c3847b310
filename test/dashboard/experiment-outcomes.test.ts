// Outcomes in every list, and /metrics with bounded labels, on a real cluster (redis-server, orch
// serve, orch worker with the fixture rank, one card): one experiment runs to done while a
// second waits behind it for the card and is cancelled there. /metrics parses as Prometheus text
// and every label value comes from a fixed set (states, outcomes, reason codes) or names one of
// the cluster's own hosts and cards: the waiting reason was once the scheduler's sentence, with
// an experiment id and a moving ETA in it. `orch status` (text and --json) and the dashboard's
// /experiments show each ended experiment's verdict, change, CI and duration, and both filter by
// state, verdict and name.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { ATTEMPT_OUTCOMES, CARD_STATES } from '../../orchestrator/dashboard/metrics.ts';
import { WAIT_REASONS } from '../../orchestrator/dashboard/wait-reason-code.ts';
import { OUTCOMES } from '../../orchestrator/experiment/outcome-codes.ts';
import { EXPERIMENT_STATES } from '../../store/experiment-store.ts';
import { type Cluster, type OrchChild, runOrch, spawnOrch, startCluster } from '../orchestrator/orch-cluster.ts';
import { waitFor } from '../utils/wait-for.ts';
import { type TestDashboard, testDashboard } from './dashboard-harness.ts';

let c: Cluster;
let d: TestDashboard;
let dir: string;
let done: string;
let cancelled: string;
/** scraped while the second experiment waited for the card */
let whileWaiting: string;
/** the second experiment's blocks as stored around that scrape: what a failure prints beside it */
let waitingBlocks: string;
const submits: OrchChild[] = [];

async function scrape(): Promise<string> {
  const r = await d.get('/metrics');
  assert.equal(r.status, 200);
  return r.text;
}

/** Each block's phase and stored reason, in block order. */
async function blockWhys(id: string): Promise<{ block: number; phase: string; why: string | null }[]> {
  return Object.values(await c.redis.hgetall(`${c.prefix}:experiment:${id}:blocks`))
    .map((b) => {
      const { block, phase, why } = JSON.parse(b) as { block: number; phase: string; why: string | null };
      return { block, phase, why };
    })
    .sort((a, b) => a.block - b.block);
}

before(async () => {
  c = await startCluster();
  dir = mkdtempSync(join(tmpdir(), 'orch-outcomes-'));
  const results = join(dir, 'results');
  d = await testDashboard({ url: c.url, prefix: c.prefix, resultsRoot: results });
  c.startServe();
  await c.startWorker({ cpuCards: 1, repMs: 300 });
  const ids = () => c.redis.zrange(`${c.prefix}:exps`, '0', '-1');
  submits.push(spawnOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml', '--results', results], c.env));
  done = await waitFor('the first experiment registered', async () => (await ids())[0], {
    timeoutMs: 30_000,
    intervalMs: 50,
  });
  submits.push(spawnOrch(['submit', 'test/fixtures/specs/tiny-loo.yaml', '--results', results], c.env));
  cancelled = await waitFor('the second experiment registered', async () => (await ids()).find((x) => x !== done), {
    timeoutMs: 30_000,
    intervalMs: 50,
  });
  // The scheduler wrote why the second one's blocks wait (its sentence names the first
  // experiment), and a scrape saw it. The second is mostly submitted while the first's last block
  // runs: its block 0, the oldest waiting, gets its reason at once, block 1 only once it has waited
  // WHY_FIRST_MS (orchestrator/scheduler/grant-apply.ts). When the first ended in that second,
  // a scrape taken just after block 0's reason appeared found block 0 running and block 1 with
  // no reason yet (not-planned): no block under cards-busy or behind-older. A scrape counts only
  // if the second's blocks stood still across it, one of them waiting with a reason.
  whileWaiting = await waitFor(
    'a scrape while a block of the second experiment waits with a reason',
    async () => {
      const before = await blockWhys(cancelled);
      if (!before.some((b) => b.phase === 'waiting' && b.why)) return undefined;
      const text = await scrape();
      waitingBlocks = JSON.stringify(await blockWhys(cancelled));
      return waitingBlocks === JSON.stringify(before) ? text : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 50 },
  );
  // cancelled while a block of it waits (its block 0 may run by now: the first ended under load)
  assert.equal((await runOrch(['cancel', cancelled], c.env)).code, 0);
  await waitFor(
    'the second experiment cancelled',
    async () => (await c.redis.hget(`${c.prefix}:experiment:${cancelled}`, 'state')) === 'cancelled',
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  await waitFor(
    'the first experiment done',
    async () => (await c.redis.hget(`${c.prefix}:experiment:${done}`, 'state')) === 'done',
    { timeoutMs: 120_000, intervalMs: 100 },
  );
  await Promise.all(submits.map((s) => s.exited));
});

after(async () => {
  // a submit still running when an assertion failed is killed, or the test would wait on it
  for (const s of submits) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
  await d?.close();
  await c?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("/metrics: every label value from a fixed set or the cluster's own hosts and cards; outcome counters; worker and card gauges", async () => {
  const cards = Object.entries(await c.redis.hgetall(`${c.prefix}:cards`)).map(([id, v]) => ({
    id,
    ...(JSON.parse(v) as { host: string; backend: string }),
  }));
  const allowed: Record<string, ReadonlySet<string>> = {
    state: new Set([...CARD_STATES, ...EXPERIMENT_STATES]),
    reason: new Set(WAIT_REASONS),
    outcome: new Set([...ATTEMPT_OUTCOMES, ...OUTCOMES]),
    host: new Set(cards.map((x) => x.host)),
    card: new Set(cards.map((x) => x.id)),
    backend: new Set(cards.map((x) => x.backend)),
    le: null as unknown as Set<string>,
  };
  for (const text of [whileWaiting, await scrape()]) {
    for (const family of parsePrometheusTextFormat(text)) {
      for (const sample of family.metrics) {
        for (const [label, value] of Object.entries(sample.labels ?? {})) {
          assert.ok(label in allowed, `${family.name}: label ${label} has no fixed set`);
          if (allowed[label])
            assert.ok(
              allowed[label]!.has(value),
              `${family.name}{${label}="${value}"}: not one of ${[...allowed[label]!].join(', ')}`,
            );
        }
      }
    }
  }
  const value = (text: string, name: string, labels: Record<string, string> = {}) => {
    const m = parsePrometheusTextFormat(text)
      .find((f) => f.name === name)
      ?.metrics.find((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v));
    return m?.value === undefined ? null : Number(m.value);
  };
  const lines = (text: string, name: string) =>
    text
      .split('\n')
      .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
      .join('\n');
  assert.ok(
    (value(whileWaiting, 'orch_blocks_waiting', { reason: 'cards-busy' }) ?? 0) +
      (value(whileWaiting, 'orch_blocks_waiting', { reason: 'behind-older' }) ?? 0) >
      0,
    `the waiting blocks counted under a reason code:\n${lines(whileWaiting, 'orch_blocks_waiting')}\nthe second experiment's blocks around that scrape: ${waitingBlocks}`,
  );
  const last = await scrape();
  assert.equal(value(last, 'orch_experiments_ended_total', { outcome: 'cancelled' }), 1);
  const verdict = JSON.parse((await runOrch(['status', done, '--json'], c.env)).stdout).experiments[0].outcome
    .outcome as string;
  assert.equal(
    value(last, 'orch_experiments_ended_total', { outcome: verdict }),
    1,
    `the done experiment under its verdict ${verdict}`,
  );
  assert.equal(value(last, 'orch_experiments', { state: 'done' }), 1);
  assert.equal(value(last, 'orch_worker_up', { host: 'h1' }), 1);
  assert.equal(value(last, 'orch_worker_cards', { host: 'h1' }), 1);
  assert.equal(value(last, 'orch_card_up', { host: 'h1', card: cards[0]!.id, backend: 'cpu' }), 1);
  assert.equal(value(last, 'orch_card_held', { card: cards[0]!.id }), 0);
  assert.equal(value(last, 'orch_card_busy_ratio', { host: 'h1' }), 0);
  assert.ok(!last.includes('_share'), 'a ratio is named _ratio');
  // the cancelled one may have started a block when the first ended under load: count from the stores
  const attempts = (
    await Promise.all([done, cancelled].map((id) => c.redis.hvals(`${c.prefix}:experiment:${id}:blocks`)))
  )
    .flat()
    .flatMap((b) => (JSON.parse(b) as { attempts: { outcome: string }[] }).attempts);
  assert.ok(
    attempts.filter((a) => a.outcome === 'committed').length >= 3,
    "the done experiment's three blocks at least",
  );
  for (const outcome of ATTEMPT_OUTCOMES)
    assert.equal(
      value(last, 'orch_block_attempts_total', { outcome }) ?? 0,
      attempts.filter((a) => a.outcome === outcome).length,
      `attempts ${outcome}`,
    );
});

test('orch status shows outcomes (text and --json) and filters by state, verdict and name', async () => {
  const json = JSON.parse((await runOrch(['status', '--json'], c.env)).stdout) as {
    experiments: {
      id: string;
      outcome: { outcome: string; change: number | null; ci: [number, number] | null; duration_ms: number } | null;
    }[];
  };
  const byId = new Map(json.experiments.map((e) => [e.id, e.outcome]));
  const ended = byId.get(done)!;
  assert.ok(
    ended.change !== null && ended.ci !== null && ended.ci[0] <= ended.change && ended.change <= ended.ci[1],
    JSON.stringify(ended),
  );
  assert.ok(ended.duration_ms > 0);
  assert.deepEqual(
    { ...byId.get(cancelled), duration_ms: 0 },
    { outcome: 'cancelled', verdict: null, change: null, ci: null, duration_ms: 0 },
    'a cancelled experiment has no speed verdict',
  );
  const text = (await runOrch(['status'], c.env)).stdout;
  assert.match(
    text,
    new RegExp(
      `${done}  done  12/12 reps measured  ${ended.outcome} [+−]\\d+\\.\\d\\d % \\(CI [+−]\\d+\\.\\d\\d % – [+−]\\d+\\.\\d\\d %\\) in \\d+ s`,
    ),
  );
  assert.match(text, new RegExp(`${cancelled}  cancelled  .*  cancelled in \\d+ s`));

  const listed = async (...args: string[]) =>
    (JSON.parse((await runOrch(['status', '--json', ...args], c.env)).stdout) as typeof json).experiments.map(
      (e) => e.id,
    );
  assert.deepEqual(await listed('--state', 'cancelled'), [cancelled]);
  assert.deepEqual(await listed('--verdict', ended.outcome), [done]);
  assert.deepEqual(await listed('--verdict', 'cancelled'), [cancelled]);
  assert.deepEqual(await listed('--name', 'tiny-loo'), [cancelled]);
  assert.deepEqual(await listed('--name', 'no-such-name'), []);
  const bad = await runOrch(['status', '--verdict', 'slowish'], c.env);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, new RegExp(`orch status: verdict "slowish" is not one of ${OUTCOMES.join(', ')}`));
});

test('/experiments shows outcomes and filters by the query string', async () => {
  const rows = async (query: string) => {
    const r = await d.get(`/experiments${query}`);
    assert.equal(r.status, 200);
    return [...r.text.matchAll(/<tr data-experiment="([^"]+)">(.*?)<\/tr>/gs)].map((m) => ({
      id: m[1]!,
      cells: [...m[2]!.matchAll(/<td[^>]*>(.*?)<\/td>/gs)].map((x) => x[1]!.replace(/<[^>]+>/g, '')),
    }));
  };
  const all = await rows('');
  assert.deepEqual(
    all.map((r) => r.id),
    [cancelled, done],
    'newest first',
  );
  const json = JSON.parse((await runOrch(['status', done, '--json'], c.env)).stdout).experiments[0].outcome as {
    outcome: string;
  };
  assert.equal(all[1]!.cells[4], json.outcome, 'the same verdict as orch status');
  assert.match(all[1]!.cells[5]!, /^[+−]\d+\.\d\d %$/);
  assert.equal(all[0]!.cells[4], 'cancelled');
  assert.equal(all[0]!.cells[5], '–', 'no change for a cancelled experiment');
  assert.deepEqual(
    (await rows(`?verdict=${json.outcome}`)).map((r) => r.id),
    [done],
  );
  assert.deepEqual(
    (await rows('?state=cancelled')).map((r) => r.id),
    [cancelled],
  );
  assert.deepEqual(
    (await rows('?name=tiny-ab')).map((r) => r.id),
    [done],
  );
  const bad = await d.get('/experiments?verdict=slowish');
  assert.match(bad.text, /No list: verdict &quot;slowish&quot; is not one of faster, slower/);
  assert.match(bad.text, /<form method="get" action="\/experiments" id="filter">/, 'the form stays to pick another');
});
