/**
 * One record of a rep, through a real `orch submit` (embedded, graphrt on its CPU backend): an A/B
 * whose reps have 800 steps, more than the event stream keeps of a rep line (worker/event-stream.ts
 * cuts an event at 16 KiB, ~575 steps). The card time and `orch trace` read the committed reps,
 * so each of the 6 reps counts in the card time and is a slice of the trace, although the stream's
 * copy of every rep line was cut. Skips, saying so, when native/build/graphrt has not been built,
 * except under CI.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { EXIT_CODES } from '../../orchestrator/report/outcome-exit-code.ts';
import { GRAPHRT, skipWithoutBinary } from '../native/graphrt.ts';
import { runOrch } from '../orchestrator/orch-cluster.ts';

const noCluster = { REDIS_URL: '', ORCH_PREFIX: '', ORCH_LOG: 'warn' };

test('an 800-step A/B: card time counts its 6 reps and the trace holds 6 rep slices, from the committed reps', {
  skip: skipWithoutBinary,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'orch-rep-record-'));
  try {
    const results = join(dir, 'results');
    const env = { ...noCluster, ORCH_GRAPHRT: GRAPHRT, ORCH_CPU_CARDS: '1' };
    const r = await runOrch(['submit', 'test/fixtures/specs/ab-800-steps.yaml', '--results', results], env, 240_000);
    // the verdict of 2 pairs on a shared cpu is noise (here an A/A of 2 pairs once failed at p = 0.03,
    // exit 5): what is under test is the record of the reps, whatever the verdict of the analysis
    const analysed = [EXIT_CODES.faster, EXIT_CODES.inconclusive, EXIT_CODES.slower, EXIT_CODES.invalid];
    assert.ok(analysed.includes(r.code ?? -1), r.stderr + r.stdout);
    const [id] = readdirSync(results);
    const out = join(results, id!);

    // the premise: the stream's copy of each rep line was cut (a text body, not a rep line)
    const events = readFileSync(join(out, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: unknown });
    assert.equal(
      events.filter((e) => typeof e.event === 'object' && (e.event as { type?: string } | null)?.type === 'rep').length,
      0,
      'no whole rep line in the stream',
    );
    assert.equal(
      events.filter((e) => typeof e.event === 'string' && e.event.includes('"type":"rep"')).length,
      6,
      'six rep lines, each cut',
    );

    // card time: one row for the one card, 6 reps, a busy share above 0 and at most 100 %
    const report = readFileSync(join(out, 'report.md'), 'utf8');
    const section = report.slice(report.indexOf('## Card time'));
    const lines = section.split('\n');
    const cellsOf = (l: string) => l.split('|').map((c) => c.trim());
    const header = cellsOf(lines.find((l) => l.startsWith('| block |')) ?? '');
    const rows = lines.filter((l) => l.startsWith('| 0 | 1 |'));
    assert.equal(rows.length, 1, section);
    const cell = (name: string) => cellsOf(rows[0]!)[header.findIndex((h) => h.startsWith(name))] as string;
    assert.equal(cell('reps'), '6', `reps: ${rows[0]}`);
    const [step, busy, rep] = ['step share', 'busy share', 'rep share'].map((n) => Number(cell(n).replace(' %', '')));
    assert.ok(busy! > 0 && busy! <= 100 && step! > 0 && rep! >= busy! && rep! <= 100, rows[0]);

    // `orch trace` from the results directory: 6 rep slices, each as long as its measured steps at least
    const t = await runOrch(['trace', id!, '--results', results], env);
    assert.equal(t.code, 0, t.stderr);
    const trace = JSON.parse(t.stdout) as {
      traceEvents: { cat?: string; dur?: number; args?: { steps?: number; median_step_ms?: number } }[];
    };
    const reps = trace.traceEvents.filter((e) => e.cat === 'rep');
    assert.equal(reps.length, 6);
    for (const s of reps)
      assert.ok(
        s.args?.steps === 800 && (s.dur as number) >= 800 * (s.args.median_step_ms as number) * 1000 * 0.5,
        JSON.stringify(s),
      );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
