/**
 * A trace answer with CUPTI's own timestamps, ns since the epoch (past 2^53, so no JSON number holds
 * them exactly), as a rank library writes it: the worker's line parser (jobs/orch-rank-protocol.ts
 * parseOrchRankLine) counts them from the earliest, exactly, before JSON.parse, and the summary is
 * the one of the same trace given in times since the trace began. And an answer the schema refuses
 * is refused in one short message: its first three issues and how many there were, never one per
 * kernel.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type OrchRankTrace, parseOrchRankLine, rebaseTraceTimes } from '../../jobs/orch-rank-protocol.ts';
import { traceArmOf } from '../../orchestrator/stats/trace-arm.ts';

// an H200's CUPTI clock in December 2026: 1.796e18 ns, 200 times 2^53
const EPOCH = 1_796_400_000_123_456_789n;

/** A trace answer line, its times written as integers from `base` on (BigInt: exact at any size). */
function traceLine(base: bigint, kernelsPerStep: number): string {
  const steps: string[] = [];
  const kernels: string[] = [];
  for (let s = 0; s < 3; s++) {
    const at = base + BigInt(s * 1_000_000);
    steps.push(`{"start_ns":${at},"end_ns":${at + 400_000n}}`);
    for (let k = 0; k < kernelsPerStep; k++) {
      // 1.3 µs kernels 0.7 µs apart: below the 256 ns a double can tell apart at 1.8e18
      const start = at + 10_000n + BigInt(k * 2_000) + BigInt(s * 3);
      kernels.push(`{"start_ns":${start},"end_ns":${start + 1_301n},"graph_id":0,"stream_id":7}`);
    }
  }
  return `{"v":1,"type":"trace","id":"b0-a1-probe0","arm":"eager","mode":"eager","trace":{"source":"cupti","steps":[${steps.join(',')}],"kernels":[${kernels.join(',')}],"graphs":[],"dropped":0},"t_start_ns":5,"t_end_ns":6,"final":true}`;
}

test('epoch-nanosecond timestamps: accepted, counted from the earliest exactly, summarised as the same trace since its start', () => {
  const epoch = parseOrchRankLine(traceLine(EPOCH, 150)) as OrchRankTrace;
  const relative = parseOrchRankLine(traceLine(10n, 150)) as OrchRankTrace;
  assert.equal(epoch.type, 'trace');
  if (epoch.trace.source !== 'cupti' || relative.trace.source !== 'cupti') assert.fail('traced');
  assert.equal(epoch.trace.steps[0]!.start_ns, 0, 'the earliest time is 0');
  assert.equal(epoch.trace.kernels[1]!.start_ns - epoch.trace.kernels[0]!.end_ns, 699, 'exact to the nanosecond');
  const a = traceArmOf('eager', [epoch], { ns: 800 });
  const b = traceArmOf('eager', [relative], { ns: 800 });
  assert.deepEqual(a.summary, b.summary);
  assert.equal(a.summary?.kernels, 150);
  // times that fit are left as they are
  const small = traceLine(10n, 2);
  assert.equal(rebaseTraceTimes(small), small);
});

test('an answer the schema refuses: the first three issues and a count, not one per kernel', () => {
  const bad = traceLine(10n, 3000).replaceAll('"stream_id":7', '"stream_id":-1');
  assert.throws(
    () => parseOrchRankLine(bad),
    (e: Error) => {
      assert.match(
        e.message,
        /^not an orch-rank line: trace\.trace\.kernels\.0\.stream_id: [^;]+; trace\.trace\.kernels\.1\.stream_id: [^;]+; trace\.trace\.kernels\.2\.stream_id: [^;]+; and 8997 more \(9000 issues\)$/,
      );
      assert.ok(e.message.length < 600, `${e.message.length} characters`);
      return true;
    },
  );
});
