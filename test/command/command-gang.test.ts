/**
 * A user's program as a 2-rank gang (resident, `blocks: { ranks: 2 }` on two cpu cards) through
 * `orch submit`: examples/torch-decode/decode.py on its pure-Python path. Card time is per card,
 * each card against its own lease (rep share ≤ 100 %, gaps ≥ 0: two ranks' spans were once summed
 * against one lease, 103.6 % and −25 ms); the identity gate is every rank's (a check per rank) and
 * a stale input planted on rank 1 only (test/fixtures/ranks/decode-stale-rank1.py) is named as rank 1.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { submitSpec } from '../utils/submit-spec.ts';

function spec(name: string, cmd: string, graphToggles: string): string {
  return `name: ${name}
design: ab
workload:
  runtime: command
  run: { cmd: ${cmd}, mode: resident, hello_timeout_s: 60 }
  toggles: { GRAPH: request, STALE_INPUT: request }
  warmup: 2
  steps: 6
toggles: [GRAPH, STALE_INPUT]
arms:
  - { name: eager, toggles: { GRAPH: false } }
  - { name: graph, toggles: ${graphToggles} }
reps: 3
blocks: { count: 1, ranks: 2 }
gates:
  identity: { toggle: GRAPH, replays: 7 }
  aa: false
`;
}

const env = { PYTHONDONTWRITEBYTECODE: '1', REDIS_URL: '', ORCH_PREFIX: '', ORCH_CPU_CARDS: '2' };

/** The card time table's rows as header → cell maps. */
function cardTime(report: string): Record<string, string>[] {
  const lines = report.slice(report.indexOf('## Card time')).split('\n');
  const cells = (l: string) =>
    l
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
  const header = cells(lines.find((l) => l.startsWith('| block |')) ?? '');
  return lines
    .filter((l) => /^\| \d+ \| \d+ \|/.test(l))
    .map((l) => Object.fromEntries(cells(l).map((c, i) => [header[i]!, c])));
}

describe('a 2-rank command gang through orch submit', () => {
  test('card time per card: rep share ≤ 100 % and gaps ≥ 0 on each; the gate counts a check per rank', () => {
    const r = submitSpec(
      'command-gang',
      spec('command-gang', 'python3 examples/torch-decode/decode.py', '{ GRAPH: true }'),
      env,
    );
    assert.ok([0, 3, 4].includes(r.code ?? -1), r.output);
    const rows = cardTime(r.report);
    assert.equal(rows.length, 2, r.report);
    assert.deepEqual(
      rows.map((x) => x.card!.replace(/@.*\(/, ' (')),
      ['cpu:0 (rank 0)', 'cpu:1 (rank 1)'],
    );
    for (const row of rows) {
      assert.equal(row.reps, '6', JSON.stringify(row));
      const share = Number(row['rep share']!.replace(' %', ''));
      assert.ok(share > 0 && share <= 100, `rep share ${row['rep share']}`);
      for (const g of ['gap p50', 'gap p99']) assert.ok(Number(row[g]!.replace(' ms', '')) >= 0, `${g} ${row[g]}`);
    }
    assert.match(
      r.report,
      /\| identity \| pass \| graph replay byte-identical to eager in 2 check\(s\) \(1 gate\(s\) × 2 ranks/,
    );
  });

  test('a stale input on rank 1 only: the gate fails naming rank 1, its replay and output', () => {
    const r = submitSpec(
      'command-gang-stale',
      spec(
        'command-gang-stale',
        'python3 test/fixtures/ranks/decode-stale-rank1.py',
        '{ GRAPH: true, STALE_INPUT: true }',
      ),
      env,
    );
    assert.equal(r.code, 5, r.output);
    assert.match(
      r.report,
      /identity gate failed: graph replay differs from eager \(block 0 arm graph rank 1 \(card cpu:1@[^)]*\) first differing replay 2, output logits \(1 of 2 ranks failed\)\)/,
    );
  });
});
