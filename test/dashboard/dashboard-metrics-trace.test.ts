// /metrics and `orch trace` on a real cluster (redis-server, orch serve, orch worker with the
// fixture rank): the metrics page parses as Prometheus text, its rep counter moves while reps
// run, and the trace of the experiment — from Redis and from its results' events.jsonl — is a
// valid Trace Event Format document with a track per card and rank.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { runOrch, spawnOrch, startCluster } from '../orchestrator/orch-cluster.ts';
import { waitFor } from '../utils/wait-for.ts';
import { type TestDashboard, testDashboard } from './dashboard-harness.ts';
import { ChromeTraceSchema } from './trace-schema.ts';

async function scrape(d: TestDashboard) {
  const r = await d.get('/metrics');
  assert.equal(r.status, 200);
  assert.match(r.type, /text\/plain; version=0\.0\.4/);
  const families = parsePrometheusTextFormat(r.text);
  return new Map(families.map((f) => [f.name, f]));
}

function value(
  families: Awaited<ReturnType<typeof scrape>>,
  name: string,
  labels: Record<string, string> = {},
): number | null {
  const m = families.get(name)?.metrics.find((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v));
  return m?.value === undefined ? null : Number(m.value);
}

test('metrics move while reps run; orch trace is a valid Chrome trace', async () => {
  const c = await startCluster();
  const dir = mkdtempSync(join(tmpdir(), 'orch-dash-metrics-'));
  const results = join(dir, 'results');
  const d = await testDashboard({ url: c.url, prefix: c.prefix, resultsRoot: results });
  try {
    c.startServe();
    await c.startWorker({ cpuCards: 1, repMs: 300 });
    const before = await scrape(d);
    assert.equal(value(before, 'orch_cards', { state: 'free' }), 1);
    assert.equal(
      before.get('orch_nightly_last_success_timestamp_seconds')?.metrics.length,
      0,
      'the nightly gauge exists with no samples',
    );
    assert.ok((value(before, 'orch_redis_used_memory_bytes') ?? 0) > 0);
    assert.equal(before.get('orch_reps_total')?.type, 'COUNTER');

    const submit = spawnOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml', '--results', results], c.env);
    const first = await waitFor(
      'a rep counted',
      async () => {
        const n = value(await scrape(d), 'orch_reps_total') ?? 0;
        return n > 0 ? n : null;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    const during = await scrape(d);
    console.log(`first scrape with reps: ${first}; cards held ${value(during, 'orch_cards', { state: 'held' })}`);
    const later = await waitFor(
      'the rep counter moved',
      async () => {
        const n = value(await scrape(d), 'orch_reps_total') ?? 0;
        return n > first ? n : null;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    const ids = await c.redis.zrange(`${c.prefix}:exps`, '0', '-1');
    assert.equal(ids.length, 1);
    const id = ids[0]!;
    await submit.exited;
    // submit's exit code is the verdict's (tiny fixture reps: usually inconclusive); the run itself ended done
    assert.equal(await c.redis.hget(`${c.prefix}:experiment:${id}`, 'state'), 'done', submit.out());
    const after = await scrape(d);
    assert.equal(value(after, 'orch_reps_total'), 12, `counter went ${first} → ${later} → 12`);
    const hist = after.get('orch_rep_duration_seconds');
    assert.equal(hist?.type, 'HISTOGRAM');
    assert.equal(Number(hist?.metrics[0]?.count), 12);

    for (const args of [
      ['trace', id],
      ['trace', id, '--from-results', '--results', results],
    ]) {
      const r = await runOrch(args, c.env);
      assert.equal(r.code, 0, r.stderr);
      const trace = ChromeTraceSchema.parse(JSON.parse(r.stdout));
      const names = trace.traceEvents.map((e) => e.name);
      assert.ok(
        trace.traceEvents.some(
          (e) => e.ph === 'M' && e.name === 'process_name' && /^h1\/.+/.test(String(e.args?.name)),
        ),
        'a track named host/card',
      );
      assert.ok(trace.traceEvents.some((e) => e.ph === 'M' && e.name === 'thread_name' && e.args?.name === 'rank 0'));
      assert.equal(names.filter((n) => /^rep (eager|graph)$/.test(n)).length, 12, args.join(' '));
      assert.equal(
        names.filter((n) => /^block \d attempt 1$/.test(n)).length,
        3,
        'an attempt slice per block on the card',
      );
      assert.equal(names.filter((n) => /^worker: block \d attempt 1$/.test(n)).length, 3, 'and on the worker track');
      assert.equal(names.filter((n) => n === 'block-committed').length, 3);
      assert.ok(names.some((n) => n.startsWith('capture graph')));
      for (const e of trace.traceEvents.filter((x) => x.ph === 'X' && x.name.startsWith('rep ')))
        assert.ok((e as { dur: number }).dur >= 0);
    }
  } finally {
    await d.close();
    await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
