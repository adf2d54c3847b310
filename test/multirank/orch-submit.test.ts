/**
 * A 4-rank block end to end through `orch submit` in the embedded default (no REDIS_URL): the
 * local worker offers 4 cpu cards (ORCH_CPU_CARDS=4 names them explicitly: on a machine with fewer
 * cores the embedded default refuses 4 cpu ranks, and this test checks what runs, not timings), starts the 4 graphrt ranks of the
 * block together on one rendezvous, runs the identity gate on every rank, then the reps; the
 * results are written. And the same with a capture failure planted on rank 2: every rank runs
 * eager, the gates still pass, nothing hangs.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { skipWithoutBinary } from '../native/graphrt.ts';
import { runOrch } from '../orchestrator/orch-cluster.ts';

const SPEC = 'test/multirank/tp4-allreduce.yaml'; // 2 arms x 2 reps, 1 block of 4 ranks, 2 layers
const embedded = { REDIS_URL: '', ORCH_PREFIX: '', ORCH_LOG: 'warn', ORCH_CPU_CARDS: '4' };

interface Ev {
  rank: number | string;
  event: Record<string, unknown>;
}

async function submit(env: Record<string, string>): Promise<{
  summary: { state: string; accounting: { planned: number; measured: number } };
  events: Ev[];
  report: string;
}> {
  const dir = mkdtempSync(join(tmpdir(), 'orch-multirank-'));
  try {
    const r = await runOrch(['submit', SPEC, '--results', dir], { ...embedded, ...env }, 60_000);
    assert.notEqual(r.code, null, 'orch submit ended');
    const [id] = readdirSync(dir);
    assert.ok(id, `no results written: ${r.stderr}`);
    const summary = JSON.parse(readFileSync(join(dir, id, 'summary.json'), 'utf8'));
    const events = readFileSync(join(dir, id, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Ev);
    return { summary, events, report: readFileSync(join(dir, id, 'report.md'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const ofType = (events: Ev[], type: string) => events.filter((e) => e.event.type === type && e.rank !== '');

describe('orch submit: one block of 4 ranks (cpu)', { skip: skipWithoutBinary }, () => {
  test('4 ranks started together, identity gate passing on every rank, every rep measured, same sums on every rank', async () => {
    const t0 = Date.now();
    const { summary, events, report } = await submit({});
    console.log(`# orch submit of a 4-rank block: ${Date.now() - t0} ms`);
    assert.equal(summary.state, 'done');
    assert.deepEqual([summary.accounting.planned, summary.accounting.measured], [4, 4]);
    const hellos = ofType(events, 'hello');
    assert.deepEqual(hellos.map((e) => Number(e.event.rank)).sort(), [0, 1, 2, 3]);
    assert.ok(hellos.every((e) => e.event.world === 4 && Number(e.rank) === e.event.rank));
    const gates = ofType(events, 'gate');
    assert.equal(gates.length, 4, 'the graph arm is gated on every rank');
    for (const g of gates)
      assert.deepEqual(
        [g.event.pass, g.event.mode, g.event.collectives_per_step],
        [true, 'graph', 2],
        JSON.stringify(g),
      );
    const reps = ofType(events, 'rep');
    assert.equal(reps.length, 16, '4 reps x 4 ranks');
    for (const id of new Set(reps.map((e) => e.event.id))) {
      const same = reps.filter((e) => e.event.id === id);
      assert.equal(
        new Set(same.map((e) => JSON.stringify(e.event.hashes))).size,
        1,
        `rep ${String(id)}: every rank holds the same output`,
      );
      const want = same[0]?.event.arm === 'graph' ? 'graph' : 'eager';
      assert.ok(same.every((e) => e.event.mode === want && e.event.collectives_per_step === 2));
    }
    // The report's ranks section: per arm and rank the gate, hashes against rank 0's, collectives, nodes.
    assert.match(report, /## Ranks\n\n.*Every rank holds rank 0's hashes\./);
    for (let r = 0; r < 4; r++)
      assert.match(
        report,
        new RegExp(`\\| graph \\| ${r} \\| 1 / 1 \\| 2 \\| graph \\| 3 / 3 \\| 2 \\| \\d+ \\| \\d+ \\|`),
      );
    assert.match(report, /## Card time/);
  });

  test('a capture failure planted on rank 2: every rank runs eager, gates pass, the experiment ends', async () => {
    const { summary, events } = await submit({ GRAPHRT_PLANT_LAZY_INIT_RANK: '2' });
    assert.equal(summary.state, 'done');
    assert.equal(summary.accounting.measured, 4);
    const captures = ofType(events, 'capture');
    assert.ok(captures.length >= 4);
    for (const c of captures) assert.deepEqual([c.event.ok, c.event.failed_ranks], [false, [2]], JSON.stringify(c));
    const gates = ofType(events, 'gate');
    assert.equal(gates.length, 4);
    for (const g of gates) assert.deepEqual([g.event.pass, g.event.mode], [true, 'eager']);
    assert.ok(ofType(events, 'rep').every((e) => e.event.mode === 'eager'));
  });
});
