/**
 * `design: probe` end to end: `orch submit configs/capture-probe.yaml` (embedded Redis, the real
 * graphrt CPU backend) runs every planned probe rep as graphrt `probe` requests, commits the probe
 * records, and report.md / report.json carry the probe section — checked against the probe lines
 * graphrt printed (events.jsonl), not against numbers written here.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Probe } from '../../jobs/graphrt-protocol.ts';
import type { StreamEvent } from '../../orchestrator/results/collect-results.ts';
import type { Analysis } from '../../orchestrator/stats/types.ts';
import { runOrch } from '../orchestrator/orch-cluster.ts';

test('orch submit configs/capture-probe.yaml: every probe rep measured, the report has the probe section', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'orch-probe-'));
  try {
    const results = join(dir, 'results');
    const r = await runOrch(
      ['submit', 'configs/capture-probe.yaml', '--results', results],
      { REDIS_URL: '', ORCH_PREFIX: '', ORCH_LOG: 'warn', ORCH_CPU_CARDS: '1' },
      240_000,
    );
    const [id] = readdirSync(results);
    const out = join(results, id!);
    const md = readFileSync(join(out, 'report.md'), 'utf8');
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as Analysis;
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as {
      state: string;
      plan: { blocks: { sequence: string[] }[] };
      accounting: { planned: number; measured: number; not_run: number };
    };
    assert.equal(summary.state, 'done', `${r.stderr}\n${md}`);
    const planned = summary.plan.blocks.reduce((s, b) => s + b.sequence.length, 0);
    assert.deepEqual(summary.accounting, { ...summary.accounting, planned, measured: planned, not_run: 0 });

    const lines = readFileSync(join(out, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as StreamEvent);
    const probeLines = lines
      .filter((e) => e.committed && typeof e.event === 'object' && e.event !== null && e.event.type === 'probe')
      .map((e) => e.event as Probe);
    assert.equal(probeLines.length, planned * 5, 'five probe lines per planned rep (one rank)');

    const p = report.probe!;
    assert.ok(p, md);
    assert.equal(p.pass, true, p.message);
    // a probe claims no speed: its verdict is pass or fail, and pass exits 0 (it was headed
    // INCONCLUSIVE and exited 3 with every self-check held)
    assert.equal(report.verdict, 'pass', 'a probe whose self-checks all held passes');
    assert.match(md, /^# \S+: PASS$/m, md);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(p.rows.length, planned);
    for (const b of p.by_probe) assert.equal(b.passed, b.of, `${b.name}: ${JSON.stringify(p.rows)}`);
    // each row is the numbers graphrt printed for that rep
    const of = (name: string) => probeLines.filter((l) => l.name === name).map((l) => l.detail);
    assert.deepEqual(
      p.rows.map((row) => [row.launches_counted, row.graph_nodes, row.instantiate_ms]),
      of('launch_counter').map((d) => [d.counted, d.graph_nodes, d.instantiate_ms]),
    );
    assert.deepEqual(
      p.rows.map((row) => [row.L, row.P, row.win]),
      of('pinned_exact').map((d) => [d.L, d.P, d.win]),
    );
    assert.deepEqual(
      p.capture_errors.map((e) => [e.class, e.where, e.said]).sort(),
      of('recapture_refusals')
        .slice(0, 1)
        .flatMap((d) => [
          ['expected-refusal', 'recapture_refusals/capture_over_live_graph', d.capture_over_live_graph],
          ['expected-refusal', 'recapture_refusals/capture_without_prepare', d.capture_without_prepare],
        ])
        .sort(),
    );

    assert.match(md, /^## Capture probe$/m, md);
    assert.match(md, /^### Capture errors$/m, md);
    assert.match(md, /^Backend: cpu emulation /m, md);
    assert.deepEqual(report.backend.backends, ['cpu']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
