/**
 * examples/torch-tp (a tensor-parallel step, one all-reduce per layer) as a 2-rank gang through
 * `orch submit` in the embedded default (ORCH_CPU_CARDS=2: two cpu cards whatever the core count),
 * with Debian's torch on the CPU: the ranks meet through torch.distributed (gloo) from the
 * rendezvous environment the worker sets. Eager is measured on both ranks, with rank 0's outputs on
 * rank 1; the graph arm cannot be captured on the CPU, so every rank's identity gate answers
 * CAPTURE_FAILED with the program's reason and the arm is not measured; card time per card stays
 * within its lease. Skipped with its reason without torch in /usr/bin/python3 (the `torch` suite).
 */

import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { runOrch } from '../orchestrator/orch-cluster.ts';
import { suiteSkip, torchMissing } from '../utils/required-suite.ts';

const SPEC = 'configs/torch-tp.yaml'; // 2 ranks; eager, eager_aa, graph x 4 reps
const embedded = { REDIS_URL: '', ORCH_PREFIX: '', ORCH_LOG: 'warn', ORCH_CPU_CARDS: '2' };

interface Ev {
  rank: number | string;
  card: string;
  event: Record<string, unknown>;
}

const ofType = (events: Ev[], type: string) => events.filter((e) => e.event.type === type && e.rank !== '');

/** The rows of report.md's "Card time" table, by card. */
function cardTime(report: string): { card: string; repShare: number; gapP50: number; gapP99: number }[] {
  const section = report.split('## Card time')[1];
  assert.ok(section !== undefined, 'report.md has a Card time section');
  const ms = (s: string) =>
    s.endsWith(' ms') ? Number(s.slice(0, -3)) : s.endsWith(' s') ? 1000 * Number(s.slice(0, -2)) : Number.NaN;
  return section
    .split('\n')
    .filter((l) => /^\| \d+ \| \d+ \| /.test(l))
    .map((l) => {
      const c = l.split('|').map((x) => x.trim());
      return {
        card: c[3] as string,
        repShare: Number((c[10] as string).replace(' %', '')),
        gapP50: ms(c[11] as string),
        gapP99: ms(c[12] as string),
      };
    });
}

describe('examples/torch-tp as a 2-rank gang (torch on the CPU, gloo)', {
  timeout: 240_000,
  skip: suiteSkip('torch', torchMissing()),
}, () => {
  test('eager measured on both ranks with the same outputs; the graph arm not measured with its reason; card time within the lease', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'orch-torch-tp-'));
    try {
      const t0 = Date.now();
      const r = await runOrch(['submit', SPEC, '--results', dir], embedded, 200_000);
      console.log(`# orch submit of torch-tp (2 ranks, gloo): ${Date.now() - t0} ms, exit ${r.code}`);
      const [id] = readdirSync(dir);
      assert.ok(id, `no results written: ${r.stderr}`);
      const summary = JSON.parse(readFileSync(join(dir, id, 'summary.json'), 'utf8'));
      const events = readFileSync(join(dir, id, 'events.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Ev);
      const report = readFileSync(join(dir, id, 'report.md'), 'utf8');

      assert.equal(summary.state, 'done');
      // 3 arms x 4 reps: eager and eager_aa measured, graph not
      assert.deepEqual(
        [summary.accounting.planned, summary.accounting.measured, summary.accounting.not_run],
        [12, 8, 4],
      );
      const hellos = ofType(events, 'hello');
      assert.deepEqual(hellos.map((e) => Number(e.rank)).sort(), [0, 1], 'one rank per card');

      // the identity gate on every rank: the graph arm's capture refused by the program, with its reason and line
      const gates = ofType(events, 'error').filter((e) => String(e.event.id).includes('identity'));
      assert.deepEqual(gates.map((e) => Number(e.rank)).sort(), [0, 1]);
      for (const g of gates) {
        assert.equal(g.event.code, 'CAPTURE_FAILED', JSON.stringify(g.event));
        assert.match(String(g.event.message), /gloo all-reduce runs on the host and cannot be captured/);
        assert.match(String((g.event.frame as { file: string }).file), /examples\/torch-tp\/tp\.py$/);
      }
      for (const [rep, fate] of Object.entries(
        summary.accounting.reps as Record<string, { fate: string; reason?: string }>,
      )) {
        if (rep.includes('/graph/'))
          assert.match(fate.reason ?? '', /^not measured: capture failed: torch-tp: no CUDA graph on the CPU/, rep);
        else assert.equal(fate.fate, 'measured', rep);
      }

      // every eager rep on both ranks, eager mode, the step count asked for, rank 1 holding rank 0's outputs
      const reps = ofType(events, 'rep');
      assert.equal(reps.length, 16, '8 measured reps x 2 ranks');
      for (const rid of new Set(reps.map((e) => e.event.id))) {
        const same = reps.filter((e) => e.event.id === rid);
        assert.deepEqual(same.map((e) => Number(e.rank)).sort(), [0, 1], `rep ${String(rid)} on both ranks`);
        for (const e of same) {
          assert.equal(e.event.mode, 'eager');
          assert.equal((e.event.step_ms as number[]).length, 16);
          assert.ok((e.event.step_ms as number[]).every((ms) => ms > 0));
        }
        assert.equal(
          new Set(same.map((e) => JSON.stringify(e.event.hashes))).size,
          1,
          `rep ${String(rid)}: both ranks hold the same output`,
        );
      }
      // step k's output differs from step k+1's: the staged input reaches the all-reduced output
      const hashes = reps[0]?.event.hashes as string[];
      assert.equal(new Set(hashes).size, hashes.length);

      // card time: each card against its own lease
      const rows = cardTime(report);
      assert.deepEqual(
        rows.map((x) => /\(rank (\d)\)$/.exec(x.card)?.[1]).sort(),
        ['0', '1'],
        'one row per card, each with its rank',
      );
      for (const row of rows) {
        assert.ok(row.repShare > 0 && row.repShare <= 100, `rep share ${row.repShare} % of ${row.card}`);
        assert.ok(
          row.gapP50 >= 0 && row.gapP99 >= row.gapP50,
          `gaps of ${row.card}: ${row.gapP50} ms, ${row.gapP99} ms`,
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
