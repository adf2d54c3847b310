/**
 * The one reduction of a gang's rank answers into its rep (jobs/gang-rep.ts), and card time read
 * from committed reps (orchestrator/stats/busy-share.ts): per step the slowest rank; identity kept
 * per rank; card time per card against its own lease; impossible rank timestamps set aside with a reason.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CommandRep } from '../../jobs/command-line.ts';
import type { CommitRecord } from '../../jobs/commit-record.ts';
import { type RankAnswer, reduceGang, stepMax } from '../../jobs/gang-rep.ts';
import { type RepResult, RepResultSchema } from '../../jobs/rep-result.ts';
import { busyShare } from '../../orchestrator/stats/busy-share.ts';
import { mergeGangResults } from '../../worker/merge-gang-results.ts';

const line = (o: Partial<CommandRep> & { step_ms: number[] }): CommandRep => ({
  v: 1,
  type: 'rep',
  id: 'r',
  arm: 'A',
  workload: 'command',
  backend: 'command',
  mode: 'graph',
  warmup: 1,
  steps: o.step_ms.length,
  step_index: o.step_ms.map((_, i) => i),
  excluded: 0,
  wall_ms: 1,
  warmup_ms: [0.5],
  hashes: o.step_ms.map(() => '0123456789abcdef'),
  final: true,
  ...o,
});
const answer = (rank: number, l: CommandRep, answered_ms = 1000, host = 'h'): RankAnswer => ({
  rank,
  card: `cpu:${rank}@${host}`,
  host,
  answered_ms,
  line: l,
});

test('stepMax: per step the slowest rank, over the steps every rank has', () => {
  assert.deepEqual(
    stepMax([
      [1, 5, 2],
      [3, 1, 2],
    ]),
    [3, 5, 2],
  );
  assert.deepEqual(
    stepMax([
      [1, 5, 2, 9],
      [3, 1],
    ]),
    [3, 5],
  );
  assert.deepEqual(stepMax([[4, 4]]), [4, 4]);
  assert.deepEqual(stepMax([]), []);
});

test('reduceGang: the gang step is the max over ranks; each rank keeps its own hashes', () => {
  const a0 = answer(
    0,
    line({ step_ms: [1, 9, 3], hashes: ['aaaaaaaaaaaaaaaa', 'aaaaaaaaaaaaaaaa', 'aaaaaaaaaaaaaaaa'] }),
  );
  const a1 = answer(
    1,
    line({ step_ms: [2, 1, 7], hashes: ['bbbbbbbbbbbbbbbb', 'bbbbbbbbbbbbbbbb', 'bbbbbbbbbbbbbbbb'] }),
  );
  const g = reduceGang([a0, a1]);
  assert.deepEqual(g.step_ms, [2, 9, 7]);
  assert.deepEqual(g.hashes, a0.line.hashes, "the gang's hashes are rank 0's");
  // every rank's answer is what the committed record holds beside the gang's view
  const rec = RepResultSchema.parse({
    experiment: 'e',
    block: 0,
    attempt: 1,
    epoch: 1,
    arm: 'A',
    rep: 0,
    position: 0,
    ...g,
    answers: [a0, a1],
  });
  assert.deepEqual(
    rec.answers!.map((a) => a.line.hashes![0]),
    ['aaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbb'],
  );
});

test("mergeGangResults: a spread gang is reduced by the same reduction over every host's ranks", () => {
  const rep = (answers: RankAnswer[]) => ({
    block: 0,
    arm: 'A',
    rep: 0,
    result: {
      experiment: 'e',
      block: 0,
      attempt: 1,
      epoch: 1,
      arm: 'A',
      rep: 0,
      position: 0,
      ...reduceGang(answers),
      answers,
    },
  });
  const origin = (rank: number, host: string, card: string) => ({
    rank,
    host,
    card,
    backend: 'cpu',
    device: 'cpu',
    sm: null,
    driver: 'none',
    graphrt: ['0.1'],
    program: null,
  });
  const machineOf = (host: string) => ({
    host,
    machine: {
      os: 'Linux',
      distribution: null,
      kernel: null,
      arch: 'x64',
      cpu_model: null,
      cpu_threads: 2,
      memory_bytes: null,
      node: host,
      compiler: null,
      gpus: [],
      gpus_unread: 'cpu cards',
    },
  });
  const lead = {
    cards: ['cpu:0@h'],
    reps: [rep([answer(0, line({ step_ms: [1, 8] }))])],
    gates: [],
    ranks: [origin(0, 'h', 'cpu:0@h')],
    hosts: [machineOf('h')],
  };
  const other = {
    cards: ['cpu:1@g'],
    reps: [rep([answer(1, line({ step_ms: [5, 2] }), 1000, 'g')])],
    gates: [],
    ranks: [origin(1, 'g', 'cpu:1@g')],
    hosts: [machineOf('g')],
  };
  const merged = mergeGangResults(lead, [other]);
  const m = merged.reps[0]!.result;
  // every part's ranks are committed with the block, rank order: the provenance's hosts and cards
  assert.deepEqual(
    merged.ranks.map((r) => `${r.rank} ${r.host}`),
    ['0 h', '1 g'],
  );
  assert.deepEqual(
    merged.hosts.map((h) => h.host),
    ['h', 'g'],
  );
  assert.deepEqual(m.step_ms, [5, 8]);
  assert.deepEqual(
    m.answers!.map((a) => a.rank),
    [0, 1],
  );
});

/** A committed rep of a 2-rank gang whose ranks ran [start, end] ns each. */
function gangRep(position: number, spans: [number, number][], answeredMs: number): RepResult {
  const answers = spans.map(([s, e], rank) =>
    answer(
      rank,
      line({ id: `r${position}`, step_ms: [(e - s) / 2e6], warmup_ms: [0], t_start_ns: s, t_end_ns: e }),
      answeredMs + position,
    ),
  );
  return RepResultSchema.parse({
    experiment: 'e',
    block: 0,
    attempt: 1,
    epoch: 1,
    arm: 'A',
    rep: position,
    position,
    ...reduceGang(answers),
    answers,
  });
}
const commit: Record<string, CommitRecord> = {
  '0': { attempt: 1, epoch: 1, host: 'h', started: 1000, ready: 1010, gated: 1020, committed: 1100 },
};

test('card time is per card: two ranks busy all along are each ≤ 100 %, never summed against one lease', () => {
  const ms = 1e6;
  // each rank serves reps back to back for 60 ms of a 100 ms lease, rank 1 a little later
  const reps = [0, 1, 2].map((p) =>
    gangRep(
      p,
      [
        [(20 + 20 * p) * ms, (40 + 20 * p) * ms],
        [(21 + 20 * p) * ms, (41 + 20 * p) * ms],
      ],
      1041,
    ),
  );
  const rows = busyShare(reps, commit);
  assert.deepEqual(
    rows.map((r) => [r.card, r.rank, r.reps]),
    [
      ['cpu:0@h', 0, 3],
      ['cpu:1@h', 1, 3],
    ],
  );
  for (const r of rows) {
    assert.equal(r.leased_ms, 100);
    assert.ok(Math.abs((r.rep_share as number) - 0.6) < 1e-9, `rep share ${r.rep_share}`);
    assert.ok((r.gap_p50_ms as number) >= 0);
    assert.deepEqual(r.set_aside, []);
    assert.deepEqual([r.ready_ms, r.gates_ms, r.startup_ms], [10, 10, 20]);
  }
});

test('impossible rank timestamps are set aside with a reason, not counted', () => {
  const ms = 1e6;
  const reps = [
    gangRep(
      0,
      [
        [20 * ms, 40 * ms],
        [20 * ms, 40 * ms],
      ],
      1041,
    ),
    // rank 1: a span of 7e10 ms (t_start_ns 0 on a clock read wrong): longer than the lease
    gangRep(
      1,
      [
        [40 * ms, 60 * ms],
        [0, 7e16],
      ],
      1041,
    ),
    // rank 0: starts before its previous rep ended (a negative gap)
    gangRep(
      2,
      [
        [30 * ms, 70 * ms],
        [70 * ms, 80 * ms],
      ],
      1041,
    ),
    // rank 1: ends before it starts
    gangRep(
      3,
      [
        [80 * ms, 90 * ms],
        [95 * ms, 90 * ms],
      ],
      1051,
    ),
  ];
  const [r0, r1] = busyShare(reps, commit);
  assert.equal(r0!.set_aside.length, 1);
  assert.match(
    r0!.set_aside[0]!,
    /position 2.*card cpu:0@h \(rank 0\): it starts 30\.000 ms before the previous rep on this card ended/,
  );
  assert.equal(r1!.set_aside.length, 2);
  assert.match(r1!.set_aside[0]!, /position 1.*longer than the block's lease of 100 ms/);
  assert.match(r1!.set_aside[1]!, /position 3.*t_end_ns 90000000 is before t_start_ns 95000000/);
  for (const r of [r0!, r1!]) {
    assert.ok((r.rep_share as number) <= 1, `rep share ${r.rep_share}`);
    assert.ok((r.gap_p50_ms as number) >= 0 && (r.gap_p99_ms as number) >= 0);
  }
  // a rank on the committing host whose answer falls outside the lease
  const late = busyShare(
    [
      gangRep(
        0,
        [
          [20 * ms, 40 * ms],
          [20 * ms, 40 * ms],
        ],
        5000,
      ),
    ],
    commit,
  );
  assert.match(late[0]!.set_aside[0]!, /falls outside the lease 1000\.\.1100/);
});

test('a record without the timeline (an older one) gives no card-time row', () => {
  assert.deepEqual(
    busyShare(
      [
        gangRep(
          0,
          [
            [1, 2],
            [1, 2],
          ],
          1000,
        ),
      ],
      { '0': { attempt: 1, epoch: 1, host: 'h', committed: 5 } },
    ),
    [],
  );
});
