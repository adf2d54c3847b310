/**
 * The dashboard's nightly page and gauge read a real SQLite history file: three nights of one
 * comparison, the last a regression. /nightly heads with what last night found (the regression,
 * its experiment, report, commit and where it ran under Slurm with its node change), draws the comparison's SVG (the change line, its CI band,
 * the alerted night ringed with its finding, each night labelled, the legend whole, each point a
 * link to its night's experiment) and lists the runs; /metrics carries
 * orch_nightly_last_success_timestamp_seconds for the suite at its last done run's end.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import type { HistoryStore } from '../../history/history-store.ts';
import { openHistory } from '../../history/open-history.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { row } from '../history/nightly-row.ts';
import { freshPrefix } from '../utils/redis.ts';
import { type TestDashboard, testDashboard } from './dashboard-harness.ts';

let dir: string;
let history: HistoryStore;
let redis: RedisServerProcess;
let d: TestDashboard;
const DAY = 24 * 3600 * 1000;
const t0 = Date.UTC(2030, 0, 1, 2);

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'orch-dash-nightly-'));
  process.env.ORCH_HISTORY_DB = join(dir, 'history.sqlite');
  history = await openHistory({ url: null, file: process.env.ORCH_HISTORY_DB });
  const nights = [
    { state: 'done', verdict: 'inconclusive', change: 0.002, finding: null },
    { state: 'done', verdict: 'inconclusive', change: -0.001, finding: null },
    { state: 'done', verdict: 'slower', change: 0.05, finding: 'regression' },
  ] as const;
  for (const [i, n] of nights.entries()) {
    const at = t0 + i * DAY;
    const { run } = await history.claimRun({
      suite: 'dash',
      scheduledAt: at,
      orchVersion: null,
      orchCommit: null,
      serveHost: 'h',
    });
    // the last night ran under Slurm, on another node than the nights before
    const slurm =
      i === 2
        ? {
            slurm: { jobs: ['77'], nodes: ['gpu02'], partitions: ['h200'] },
            node_change: 'ran on Slurm node gpu02; the night before outside Slurm: not compared across Slurm nodes',
          }
        : {};
    const r = row({
      run_id: run.id,
      suite: 'dash',
      scheduled_at: at,
      verdict: n.verdict,
      change: n.change,
      ci_low: n.change - 0.01,
      ci_high: n.change + 0.01,
      finding: n.finding,
      ...slurm,
    });
    await history.finishRun(run.id, { state: n.state, error: null, alerts: n.finding ? 1 : 0, rows: [r] });
  }
  redis = await startRedisServer();
  d = await testDashboard({ url: redis.url, prefix: freshPrefix('dn') });
});

after(async () => {
  await d?.close();
  await redis?.stop();
  await history?.close();
  delete process.env.ORCH_HISTORY_DB;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('/nightly plots each comparison from the history: change, CI band, the alerted night ringed', async () => {
  const r = await d.get('/nightly');
  assert.equal(r.status, 200, r.text);
  assert.ok(!r.text.includes('id="no-history"'), 'the history is shown');
  assert.match(r.text, /<section class="suite" id="suite-dash"><h2>dash<\/h2>/);
  const svgs = r.text.match(/<svg[\s\S]*?<\/svg>/g) ?? [];
  assert.equal(svgs.length, 1, 'one plot: one comparison');
  const svg = svgs[0]!;
  assert.match(svg, /<title>ab: b vs a<\/title>/);
  assert.match(svg, /<polygon class="ci-band" points="(\S+,\S+ ){5}\S+,\S+"/, 'a band over three nights: six corners');
  assert.match(svg, /<polyline class="change" fill="none" stroke="[^"]+" points="\S+ \S+ \S+"/);
  assert.match(svg, /<polyline class="arm-value"/);
  assert.match(
    svg,
    /<circle class="alert"[^>]*><title>alert: 2030-01-03 02:00 slower \+5\.0 % \[regression\] e1 commit abc on Slurm node gpu02 \(job 77, partition h200\)<\/title>/,
  );
  assert.equal(
    (svg.match(/class="alert"/g) ?? []).length,
    3,
    'the alerted night ringed on the change and both absolute lines',
  );
  assert.ok(!/class="alert"[^>]*stroke="#d62728"/.test(svg), "the ring is not the arm line's red");
  assert.equal(
    (svg.match(/<a class="night-link" href="\/experiments\/e1">/g) ?? []).length,
    9,
    "each point of the three lines links to its night's experiment",
  );
  assert.deepEqual(
    [...svg.matchAll(/<text class="night-label"[^>]*>([^<]+)</g)].map((m) => m[1]),
    ['2030-01-01', '2030-01-02', '2030-01-03'],
    'every night labelled',
  );
  assert.deepEqual(
    [...svg.matchAll(/<text class="legend"[^>]*>([^<]+)</g)].map((m) => m[1]),
    ['change b vs a (CI band)', 'b', 'a', 'alert (ringed)'],
    'the legend whole',
  );
  assert.equal((r.text.match(/<tr><td>2030-01-0\d/g) ?? []).length, 3, 'the three runs listed');
  const lastNight = /<section id="last-night">[\s\S]*?<\/section>/.exec(r.text)?.[0] ?? '';
  assert.match(lastNight, /dash: night of 2030-01-03 02:00 UTC — done/);
  assert.match(
    lastNight,
    /<tr data-finding="regression"><td class="bad">regressed \(confirmed after correction\)<\/td><td>ab: b vs a<\/td><td class="num">\+5\.0 % \(CI \+4\.0 % to \+6\.0 %\)<\/td><td><a href="\/experiments\/e1">e1<\/a> \(<a href="\/results\/e1\/report\.md">report<\/a>\)<\/td><td><code class="commit" title="\/src">abc<\/code> <span class="muted">\/src<\/span><\/td><td class="where">Slurm node gpu02 \(job 77, partition h200\)<br><span class="muted">ran on Slurm node gpu02; the night before outside Slurm: not compared across Slurm nodes<\/span><\/td><\/tr>/,
  );
});

test('/metrics: the last nightly success per suite', async () => {
  const r = await d.get('/metrics');
  assert.equal(r.status, 200);
  const family = parsePrometheusTextFormat(r.text).find(
    (f) => f.name === 'orch_nightly_last_success_timestamp_seconds',
  );
  const last = (await history.runs('dash', 1))[0]!;
  assert.deepEqual(family?.metrics, [{ labels: { suite: 'dash' }, value: String(last.ended_at! / 1000) }]);
});
