/**
 * The trace probe's summary over committed records (orchestrator/stats/trace-probe.ts): the floor
 * from graphrt's chain runs, one per rank process however many records carry it; a floor measured
 * on graphrt's cpu backend reported but never used for an estimate; a traced arm with no floor says
 * so instead of estimating against a number made up; the probe passes once every planned rep
 * committed, traced or not.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ChainFloorRun } from '../../jobs/chain-floor-run.ts';
import { OrchRankTraceSchema, type OrchRankTrace } from '../../jobs/orch-rank-protocol.ts';
import type { ProbeRecord } from '../../jobs/probe-record.ts';
import { graphNodeFloorNs } from '../../orchestrator/stats/graph-node-floor.ts';
import { summarizeStep } from '../../orchestrator/stats/kernel-trace.ts';
import { summarizeTraceProbe, traceFloorOf } from '../../orchestrator/stats/trace-probe.ts';

const chain = (backend: 'cpu' | 'cuda', perNodeMs: number[]): ChainFloorRun => ({
  source: 'graphrt-chain', backend, device: backend === 'cuda' ? 'NVIDIA H200' : 'cpu emulation', kernels: 256,
  reps: perNodeMs.map((ms) => ({ mode: 'graph', nodes: 256, step_ms: [ms * 256, ms * 256 * 1.1, ms * 256 * 0.9] })),
});

const step = { start_ns: 0, end_ns: 100_000 };
const kernels = Array.from({ length: 10 }, (_, i) => ({ start_ns: 1_000 + i * 9_000, end_ns: 4_000 + i * 9_000, graph_id: 0, stream_id: 7 }));
const traced = (arm: string): OrchRankTrace => OrchRankTraceSchema.parse({ v: 1, type: 'trace', id: `t-${arm}`, arm, mode: 'eager', t_start_ns: 1, t_end_ns: 2, final: true, trace: { source: 'cupti', steps: [step], kernels, graphs: [], dropped: 0 } });

function record(block: number, rep: number, arm: string, floor: ChainFloorRun, trace: OrchRankTrace): ProbeRecord {
  return { experiment: 'x', block, attempt: 1, epoch: 1, arm, rep, position: rep, kind: 'trace', backend: 'cuda', host: 'h', ranks: [{ rank: 0, card: 'h/cuda:0', device: 'NVIDIA H200', probes: [], trace, floor }] };
}

test("one chain run per rank process: the floor is the median of its reps, not of every record's copy", () => {
  const a = chain('cuda', [0.0004, 0.0005, 0.0009]);
  const b = chain('cuda', [0.0006, 0.0006, 0.0006]);
  // block 0's run rides on 3 records, block 1's on 1: counted once each
  const recs = [record(0, 0, 'eager', a, traced('eager')), record(0, 1, 'eager', a, traced('eager')), record(0, 2, 'eager', a, traced('eager')), record(1, 0, 'eager', b, traced('eager'))];
  const s = summarizeTraceProbe(4, ['eager'], recs);
  const want = graphNodeFloorNs([...a.source === 'graphrt-chain' ? a.reps : [], ...b.source === 'graphrt-chain' ? b.reps : []]);
  assert.equal(s.floor.source === 'graphrt-chain' && s.floor.ns_per_node, want);
  assert.equal(s.floor.source === 'graphrt-chain' && s.floor.reps, 6);
  assert.equal(s.arms[0]!.summary!.recoverable_ns, summarizeStep({ ...step, kernels }, want).recoverable_ns);
  assert.deepEqual([s.pass, s.missing], [true, 0]);
});

test("a cpu card's chain floor is reported, never estimated against; a traced arm without a floor says why", () => {
  const cpu = summarizeTraceProbe(1, ['eager'], [record(0, 0, 'eager', chain('cpu', [0.0002]), traced('eager'))]);
  assert.equal(cpu.floor.source === 'graphrt-chain' && cpu.floor.gpu, false);
  assert.equal(cpu.arms[0]!.summary, null);
  assert.match(cpu.arms[0]!.reason ?? '', /^traced, but no graph-node floor to estimate against: the chain ran on graphrt's cpu backend \(cpu emulation\): not a GPU floor$/);
  const none = summarizeTraceProbe(2, ['eager', 'graph'], [record(0, 0, 'eager', { source: 'none', reason: 'no graphrt on this worker' }, traced('eager'))]);
  assert.deepEqual(none.floor, { source: 'none', reason: 'no graphrt on this worker' });
  assert.match(none.arms[0]!.reason ?? '', /no graph-node floor to estimate against: no graphrt on this worker/);
  assert.deepEqual([none.pass, none.missing], [false, 1]);
  assert.match(none.message, /^1 of 2 planned trace reps committed/);
  assert.deepEqual(traceFloorOf([]), { source: 'none', reason: 'no chain run reached the probe record' });
});
