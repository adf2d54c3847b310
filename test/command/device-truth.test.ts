/**
 * Device truth for a user's program, on the CPU machine, through `orch submit` (the embedded
 * default) with a fixture rank that plants what orch's injection library and NVML would answer on
 * a GPU (test/fixtures/ranks/orch-rank.mjs): the report's "Launches" section says what one step
 * launched and who counted it, "not available" (never zeros) where nobody could; a rep whose card
 * was throttled, or saw an XID error, is flagged (hygiene: flag, the default) or not used
 * (hygiene: discard). And the injection variable: named only for cuda cards, another profiler's
 * refused rather than replaced.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { countingCostSentence } from '../../jobs/counting-cost.ts';
import { WARMUP_SOURCE } from '../../orchestrator/stats/launch-summary.ts';
import { injectionEnv } from '../../worker/command/launch-counter.ts';
import { type Submitted, submitSpec } from '../utils/submit-spec.ts';

const FIXTURE = fileURLToPath(new URL('../fixtures/ranks/orch-rank.mjs', import.meta.url));

function submit(env: Record<string, string>, extra = ''): Submitted {
  return submitSpec(
    'truth',
    `name: truth
design: ab
workload:
  runtime: command
  run:
    cmd: ${JSON.stringify(`${process.execPath} ${FIXTURE}`)}
    mode: resident
    env: ${JSON.stringify(env)}
  toggles: { GRAPH: request, STALE: request }
  warmup: 1
  steps: 4
toggles: [GRAPH, STALE]
arms:
  - { name: eager, toggles: { GRAPH: false } }
  - { name: graph, toggles: { GRAPH: true } }
reps: 3
gates: { identity: { toggle: GRAPH, replays: 3 } }
${extra}`,
  );
}

const launchesSection = (report: string) => report.slice(report.indexOf('## Launches'), report.indexOf('## Card time'));

describe('launch counts and clock hygiene of a resident command rank', () => {
  test('counted launches per step per arm, and "none" with its reason where nothing counted', () => {
    const counted = submit({ FIXTURE_LAUNCHES: '1' });
    const table = launchesSection(counted.report);
    assert.match(table, /\| eager \| eager \| 3 \| 12 \| 0 \| 1 \| 0 \| 0 \| 0 \| cupti \|/, table);
    // the gate captured the graph its reps replay: the measured reps captured nothing
    assert.match(table, /\| graph \| graph \| 3 \| 0 \| 1 \| 1 \| 0 \| 0 \| 0 \| cupti \|/, table);
    const none = launchesSection(submit({}).report);
    assert.match(
      none,
      /\| eager \| eager \| 3 \| — \| — \| — \| — \| — \| — \| none: off: workload.run.launch_counts is not true \(CUPTI in the process slows timed steps: the measured cost is under this table\) \|/,
      none,
    );
    // the cost said from the measured table (jobs/counting-cost.ts), not a number of the report's own
    assert.ok(none.includes(countingCostSentence()), none);
    assert.match(
      countingCostSentence(),
      /^Counting's cost to a timed step, on against off through orch: the CUDA example \(examples\/cuda-decode\): eager [+−]\d+\.\d %, graph [+−]\d+\.\d % \(H200, bench\/h200\/user-rank\/(truth|counting)[\w.]*\.sh/,
    );
    assert.doesNotMatch(none, /\| 0 \| 0 \|/, 'not available is never shown as zeros');
  });

  test("counts of the warm-up steps (the library paused for the timed ones): the report says they are the warm-up's", () => {
    const table = launchesSection(submit({ FIXTURE_LAUNCHES: 'warmup' }).report);
    // one count per warm-up step (warmup: 1), every rep's answer checked against its request on the way
    assert.ok(table.includes(`| eager | eager | 3 | 12 | 0 | 1 | 0 | 0 | 0 | ${WARMUP_SOURCE} |`), table);
    assert.ok(table.includes(`| graph | graph | 3 | 0 | 1 | 1 | 0 | 0 | 0 | ${WARMUP_SOURCE} |`), table);
    assert.match(WARMUP_SOURCE, /warm-up step .*paused while the timed steps ran/);
  });

  test('a throttled rep and an XID error: flagged and used by default', () => {
    // requests: 1 the identity gate, then reps 2.. in the block's order
    const r = submit({ FIXTURE_THROTTLE_AT: '3', FIXTURE_XID_AT: '5' });
    assert.match(r.report, /rep 0\/\w+\/\d flagged: the card was throttled \(sw_thermal_slowdown\)/);
    assert.match(r.report, /rep 0\/\w+\/\d flagged: the card was throttled \(xid ×1\)/);
    assert.match(r.report, /\| input \| pass \| all 6 planned reps used \|/);
    assert.match(r.report, /hygiene: flag: 2 throttled rep\(s\) flagged, 0 discarded/);
  });

  test('hygiene: discard runs a throttled pair again at the block end, and counts it', () => {
    const r = submit({ FIXTURE_THROTTLE_AT: '3' }, 'hygiene: discard');
    // the re-run (a later request, not throttled) took the thrown-away rep's place, and its pair's
    assert.match(r.report, /\| input \| pass \| all 6 planned reps used \|/);
    assert.match(
      r.report,
      /hygiene: discard: 0 throttled rep\(s\) flagged, 0 discarded, 2 re-run at their block's end \(1 throttled measurement\(s\) thrown away\)/,
    );
    const reruns = r.events.filter((e) => e.event.type === 'rep' && /-rerun1$/.test(String(e.event.id)));
    assert.equal(reruns.length, 2, 'both reps of the pair ran again, under their own request ids');
  });

  test('hygiene: discard with no budget left leaves a throttled rep out, named, and counts it missing', () => {
    const r = submit({ FIXTURE_THROTTLE_AT: '3' }, 'hygiene: discard\nhygiene_reruns: 0');
    assert.match(r.report, /rep 0\/\w+\/\d not used: the card was throttled \(sw_thermal_slowdown\); hygiene: discard/);
    assert.match(r.report, /\| input \| pass \| 5 of 6 planned reps used \(see issues\) \|/);
    assert.match(r.report, /hygiene: discard: 0 throttled rep\(s\) flagged, 1 discarded/);
  });

  test('hygiene: warn uses throttled reps and counts them in one line', () => {
    const r = submit({ FIXTURE_THROTTLE_AT: '3', FIXTURE_XID_AT: '4' }, 'hygiene: warn');
    assert.match(r.report, /2 rep\(s\) ran on a throttled card and were used \(hygiene: warn\): /);
  });

  test('the injection variable: cuda cards with counts on only; another profiler refused, not replaced', () => {
    const lib = '/opt/orch/liborch_inject.so';
    assert.deepEqual(injectionEnv({ backend: 'cuda', counts: true, traceProbe: false, lib, programEnv: {} }), {
      CUDA_INJECTION64_PATH: lib,
    });
    assert.deepEqual(injectionEnv({ backend: 'cpu', counts: true, traceProbe: false, lib, programEnv: {} }), {});
    assert.deepEqual(injectionEnv({ backend: 'cuda', counts: false, traceProbe: false, lib, programEnv: {} }), {});
    assert.deepEqual(injectionEnv({ backend: 'cuda', counts: true, traceProbe: false, lib: null, programEnv: {} }), {});
    assert.throws(
      () =>
        injectionEnv({
          backend: 'cuda',
          counts: true,
          traceProbe: false,
          lib,
          programEnv: { CUDA_INJECTION64_PATH: '/opt/nsight/libToolsInjection64.so' },
        }),
      (e: Error & { code?: string }) =>
        e.code === 'RANK_INJECTION_TAKEN' &&
        /\/opt\/nsight\/libToolsInjection64\.so .*do not replace it/.test(e.message),
    );
  });
});
