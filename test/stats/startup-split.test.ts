/**
 * Card time's start-up split (orchestrator/stats/startup-split.ts) of a rank adopted from the host
 * phase whose prepare() outlasted the block before: the rank waited for it inside its lease. That
 * wait was counted as overlapped prepare() and, in the lease, as "process start and CUDA init";
 * it is prepare() paid in the lease, and the record now says how long it was (prepare_waited_ms,
 * carried from the hello by jobs/rank-startup.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RankHelloLine } from '../../jobs/rank-line.ts';
import { type RankStartup, rankStartup } from '../../jobs/rank-startup.ts';
import { startupSplit } from '../../orchestrator/stats/startup-split.ts';

const base: RankStartup = { rank: 0, card: 'cuda:0@h', hello_ms: 5_000, setup_ms: 1_000, prepare_ms: 10_000 };

test('host phase, waited for in the lease: the wait is prepare() in the lease, not overlapped and not CUDA init', () => {
  const s = startupSplit({ ...base, host_phase: true, caches: 'warm', prepare_waited_ms: 3_000 });
  assert.deepEqual([s.host_phase_ms, s.prepare_in_lease_ms, s.setup_ms, s.cuda_init_ms], [7_000, 3_000, 1_000, 1_000]);
});

test('host phase, done before the lease: all of prepare() overlapped', () => {
  const s = startupSplit({ ...base, host_phase: true, caches: 'warm', prepare_waited_ms: 0 });
  assert.deepEqual([s.host_phase_ms, s.prepare_in_lease_ms, s.cuda_init_ms], [10_000, null, 4_000]);
});

test('started inside the lease: prepare() is all in the lease', () => {
  const s = startupSplit({ ...base, hello_ms: 12_000, host_phase: false, caches: 'cold' });
  assert.deepEqual([s.host_phase_ms, s.prepare_in_lease_ms, s.cuda_init_ms], [null, 10_000, 1_000]);
});

test("the hello's wait reaches the committed startup record", () => {
  const hello = {
    v: 1,
    type: 'hello',
    backend: 'command',
    pid: 1,
    started: { host_phase: true, caches: 'warm', prepare_waited_ms: 3_000 },
    program: { name: 'p', toggles: [], prepare_ms: 10_000, setup_ms: 1_000 },
    final: true,
  } as unknown as RankHelloLine;
  const r = rankStartup(hello, 0, 'cuda:0@h', 1_000, 6_000);
  assert.equal(r.prepare_waited_ms, 3_000);
  assert.equal(startupSplit(r).prepare_in_lease_ms, 3_000);
});
