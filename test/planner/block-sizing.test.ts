/**
 * blocks.reps_per_block: auto, the pure part: the sizing from a first block's measure
 * (jobs/block-sizing.ts), the sized plan (jobs/sized-plan.ts: every arm the same reps per block,
 * the reps in all unchanged, a forged sizing refused), a number that bounds the later blocks at
 * plan time, and where auto is the default and where it is refused (jobs/reps-per-block.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeSizing, groupSizes, type SizingInput, START_UP_SHARE, sizeBlocks } from '../../jobs/block-sizing.ts';
import type { CommitRecord } from '../../jobs/commit-record.ts';
import { compileSpec } from '../../jobs/compile-spec.ts';
import { LIMITS } from '../../jobs/limits.ts';
import { type Plan, planExperiment } from '../../jobs/plan.ts';
import { repsPerBlockOf } from '../../jobs/reps-per-block.ts';
import { applyBlockSizing } from '../../jobs/sized-plan.ts';
import { SpecSchema } from '../../jobs/spec.ts';
import { firstBlockPrepare, sizingFromCommit } from '../../orchestrator/scheduler/auto-block-sizing.ts';
import { plannedBlockMs, STARTUP_MS } from '../../orchestrator/scheduler/expected-duration.ts';

const base: SizingInput = {
  startup_ms: 1500,
  fixed_ms: 40,
  rep_ms: 500,
  arms: 2,
  first_reps: 3,
  remaining: 3 * 19,
  max_reps: LIMITS.orch.reps.max,
};

/** start-up's share (ranks ready and gates, as card time counts it) of the lease a block of `k` reps per arm takes under `i` */
const share = (i: SizingInput, k: number) =>
  (i.startup_ms + i.fixed_ms) / (i.startup_ms + i.fixed_ms + i.arms * k * i.rep_ms);

function residentSpec(
  extra: Record<string, unknown> = {},
  blocks: Record<string, unknown> = {},
  mode: 'resident' | 'per_rep' = 'resident',
) {
  return SpecSchema.parse({
    name: 'auto',
    design: 'ab',
    workload: {
      runtime: 'command',
      run: { cmd: 'python3 prog.py', mode },
      toggles: { GRAPH: 'request' },
    },
    toggles: ['GRAPH'],
    arms: [
      { name: 'eager', toggles: { GRAPH: false } },
      { name: 'graph', toggles: { GRAPH: true } },
    ],
    reps: 3,
    blocks: { count: 20, ...blocks },
    ...extra,
  });
}

/** reps per arm per block: every arm the same in each block, or a message */
function perArm(plan: Plan): number[] {
  return plan.blocks.map((b) => {
    const counts = plan.arms.map((a) => b.sequence.filter((s) => s === a.name).length);
    assert.equal(new Set(counts).size, 1, `block ${b.index}: arms run ${counts} reps`);
    return counts[0] as number;
  });
}

describe('auto block sizing', () => {
  it('sizes the later blocks so that start-up (gates included) is at most 3 % of each lease, and no larger than that needs', () => {
    const s = sizeBlocks(base);
    assert.equal(s.held_by, null);
    assert.equal(
      s.sizes.reduce((a, b) => a + b, 0),
      base.remaining,
      'the reps in all are kept',
    );
    for (const k of s.sizes) assert.ok(share(base, k) <= START_UP_SHARE + 1e-12, `${k} reps: ${share(base, k)}`);
    assert.ok(share(base, s.wanted - 1) > START_UP_SHARE, 'one rep fewer than wanted would miss the target');
    assert.ok(Math.max(...s.sizes) - Math.min(...s.sizes) <= 1, `even sizes: ${s.sizes}`);
    assert.equal(s.lease_ms, base.startup_ms + base.fixed_ms + base.arms * (s.sizes[0] as number) * base.rep_ms);
    assert.equal(s.startup_ms, base.startup_ms + base.fixed_ms, 'start-up as card time counts it: the gates too');
  });

  it("a quick start keeps the spec's own blocks: never fewer reps per block than the first", () => {
    const s = sizeBlocks({ ...base, startup_ms: 10 });
    assert.equal(s.wanted, base.first_reps);
    assert.deepEqual(
      s.sizes,
      Array.from({ length: 19 }, () => 3),
    );
  });

  it('held by the reps left, and by the bound on reps per block', () => {
    const left = sizeBlocks({ ...base, rep_ms: 1 });
    assert.deepEqual(left.sizes, [base.remaining]);
    assert.equal(left.held_by, 'remaining');
    const bound = sizeBlocks({
      ...base,
      startup_ms: 60_000,
      rep_ms: 1,
      first_reps: 5,
      remaining: 5 * 99,
      max_reps: 200,
    });
    assert.equal(bound.held_by, 'max_reps');
    assert.deepEqual(bound.sizes, [165, 165, 165]);
  });

  it('never fewer later blocks than the gangs the live cards could run side by side, each still the first block or larger', () => {
    const wide = sizeBlocks({ ...base, rep_ms: 1, parallel: 4 });
    assert.equal(wide.held_by, 'cards');
    assert.deepEqual(wide.sizes, [15, 14, 14, 14]);
    assert.match(describeSizing(2, wide), /\(4 blocks, one per card free to run them side by side; \d+ would keep/);
    const more = sizeBlocks({ ...base, rep_ms: 1, parallel: 100 });
    assert.deepEqual(
      more.sizes,
      Array.from({ length: 19 }, () => 3),
      'no block below the first block’s reps',
    );
    assert.deepEqual(sizeBlocks({ ...base, parallel: 1 }), sizeBlocks(base), 'one card: the target alone');
  });

  it('groupSizes: as many blocks as hold k, the rest spread over them, never over the bound', () => {
    assert.deepEqual(groupSizes(60, 19, 200), [20, 20, 20]);
    assert.deepEqual(groupSizes(61, 19, 200), [21, 20, 20]);
    assert.deepEqual(groupSizes(10, 40, 200), [10]);
    assert.deepEqual(groupSizes(450, 200, 200), [150, 150, 150]);
    assert.deepEqual(groupSizes(0, 5, 200), []);
  });

  it('a prepare() the first block ran inside its lease is not paid again: the later blocks run it in the host phase, so it comes off their start-up', () => {
    const plan = planExperiment(residentSpec(), 'h');
    // 34 s to every hello, 30 s of it the program's prepare() (read weights), then 40 ms of gates and 3 × 2 reps of 500 ms
    const commit = (startup: Record<string, unknown>, ranks = 1): CommitRecord => ({
      attempt: 1,
      epoch: 1,
      host: 'h',
      started: 1_000_000,
      ready: 1_034_000,
      gated: 1_034_040,
      committed: 1_037_040,
      startup: Array.from({ length: ranks }, (_, rank) => ({
        rank,
        card: `h/cuda:${rank}`,
        hello_ms: 34_000,
        setup_ms: 3_000,
        ...startup,
      })),
    });
    // every rep of the first block measured
    const measured = plan.blocks[0]!.sequence.length;
    const inLease = commit({ host_phase: false, prepare_ms: 30_000 });
    assert.deepEqual(firstBlockPrepare(plan, inLease), { prepare_ms: 30_000, in_lease: true });
    const sized = sizingFromCommit(plan, inLease, 1, measured);
    assert.equal(sized?.startup_ms, 4_040, 'what a later block pays: 4 s to its hello and 40 ms of gates');
    assert.equal(sized?.overlapped_ms, 30_000);
    // sized by the 4.04 s a later block pays, not the 34.04 s the first did
    assert.equal(sized?.wanted, Math.ceil((4_040 * (1 - START_UP_SHARE)) / START_UP_SHARE / (2 * 500)));
    assert.match(
      describeSizing(2, sized!),
      /^blocks of \d+ reps per arm \(\d+ reps\): start-up 4\.04 s of [\d.]+ s, prepare\(\) 30 s in the host phase before the lease/,
    );
    // a block lasts as long as the next block's prepare(), which runs beside it in the host phase
    const slowPrep = sizingFromCommit(plan, commit({ host_phase: false, prepare_ms: 300_000 }), 1, measured);
    assert.equal(slowPrep?.wanted, Math.ceil(300_000 / (2 * 500)));
    assert.ok(2 * (slowPrep?.wanted ?? 0) * 500 >= 300_000);
    // adopted from the host phase (the build phase prepared the first block too): nothing comes off
    // its start-up, and a later block still outlasts the next one's prepare()
    const adopted = commit({ host_phase: true, hello_ms: 4_000, prepare_ms: 300_000 });
    assert.deepEqual(firstBlockPrepare(plan, adopted), { prepare_ms: 300_000, in_lease: false });
    assert.equal(sizingFromCommit(plan, adopted, 1, measured)?.startup_ms, 34_040);
    assert.equal(sizingFromCommit(plan, adopted, 1, measured)?.overlapped_ms, 300_000);
    assert.ok((sizingFromCommit(plan, adopted, 1, measured)?.wanted ?? 0) >= Math.ceil(300_000 / (2 * 500)));
    // no prepare(), or a gang of two: the whole start-up stays, nothing to outlast
    assert.equal(firstBlockPrepare(plan, commit({ host_phase: false })), null);
    assert.equal(sizingFromCommit(plan, commit({ host_phase: false }), 1, measured)?.startup_ms, 34_040);
    const gang = planExperiment(residentSpec({}, { ranks: 2 }), 'h');
    assert.equal(firstBlockPrepare(gang, commit({ host_phase: false, prepare_ms: 30_000 }, 2)), null);
  });

  it("a sized block's expected time on its cards: the first block's start-up and lease per rep × its own reps", () => {
    const spec = residentSpec();
    const plan = planExperiment(spec, 'h');
    const sizing = sizeBlocks({ ...base, arms: plan.arms.length });
    const sized = applyBlockSizing(plan, sizing, 'test');
    const later = sized.blocks[1]!;
    assert.ok(later.sequence.length > plan.arms.length * plan.reps, 'the sized block holds more reps than the spec’s');
    // as the scheduler estimates it for backfill and a running block's expected end
    const est = plannedBlockMs(sized, spec, null, later.index);
    assert.equal(est.known, true, 'measured by the first block, not a guess');
    assert.ok(Math.abs(est.ms - sizing.lease_ms) < 1e-6, `${est.ms} vs the sizing's lease ${sizing.lease_ms}`);
    // the first block and a plan not sized: the step history or the guess, by the block's own reps
    const first = plannedBlockMs(sized, spec, null, sized.blocks[0]!.index);
    assert.equal(first.known, false);
    const history = { ms_per_step: 2, n: 400 };
    const steps = spec.workload.warmup + spec.workload.steps;
    assert.equal(plannedBlockMs(plan, spec, history, 1).ms, STARTUP_MS + plan.blocks[1]!.sequence.length * 2 * steps);
  });

  it('the sized plan: the first block as registered, every arm the same reps per block, the reps in all unchanged', () => {
    const spec = residentSpec();
    const plan = planExperiment(spec, 'h');
    assert.equal(plan.reps_per_block, 'auto', 'auto is the default for a resident command rank');
    const sizing = sizeBlocks({ ...base, arms: plan.arms.length });
    const sized = applyBlockSizing(plan, sizing, 'test');
    assert.deepEqual(sized.blocks[0], plan.blocks[0]);
    assert.deepEqual(perArm(sized), [3, ...sizing.sizes]);
    assert.equal(
      sized.blocks.reduce((n, b) => n + b.sequence.length, 0),
      plan.blocks.reduce((n, b) => n + b.sequence.length, 0),
    );
    assert.deepEqual(
      sized.blocks.map((b) => b.index),
      sized.blocks.map((_, i) => i),
    );
    // interleaving intact: each block's rounds run every arm once
    for (const b of sized.blocks)
      for (let r = 0; r < b.sequence.length; r += 2)
        assert.deepEqual([...b.sequence.slice(r, r + 2)].sort(), ['eager', 'graph'], `block ${b.index} round ${r / 2}`);
    // successive blocks do not all open with the same arm
    assert.ok(new Set(sized.blocks.map((b) => b.sequence[0])).size > 1);
  });

  it('a sizing that would change the reps in all, or break the bounds, is refused naming where it was read', () => {
    const plan = planExperiment(residentSpec(), 'h');
    const sizing = sizeBlocks({ ...base, arms: plan.arms.length });
    assert.throws(
      () => applyBlockSizing(plan, { ...sizing, sizes: [...sizing.sizes, 3] }, 'orch:experiment:x field block_sizing'),
      /orch:experiment:x field block_sizing: .*must hold the 57 reps per arm/,
    );
    assert.throws(
      () => applyBlockSizing(plan, { ...sizing, sizes: [1, ...Array.from({ length: 28 }, () => 2)] }, 'where'),
      /every size must lie within 3\.\./,
    );
  });

  it('a number bounds the later blocks at plan time; equal to reps it changes nothing', () => {
    const fixed = planExperiment(residentSpec({}, { reps_per_block: 12 }), 'h');
    assert.equal(fixed.reps_per_block, 12);
    assert.deepEqual(perArm(fixed), [3, 12, 12, 11, 11, 11], 'at most 12, the reps after block 0 spread evenly');
    assert.ok(
      perArm(fixed)
        .slice(1)
        .every((k) => k <= 12 && k >= 3),
    );
    assert.equal(
      perArm(fixed).reduce((a, b) => a + b, 0),
      3 * 20,
    );
    assert.equal(planExperiment(residentSpec({}, { reps_per_block: 3 }), 'h').reps_per_block, undefined);
  });

  it('auto only where a start-up can be measured: a native spec, a sequential one or one block keep their blocks', () => {
    assert.equal(repsPerBlockOf(residentSpec({}, { count: 1 })), null);
    assert.equal(repsPerBlockOf(residentSpec({ stopping: { rule: 'sequential', max_blocks: 6 } }, { count: 6 })), null);
    assert.equal(repsPerBlockOf(residentSpec({}, {}, 'per_rep')), null);
    const asked = residentSpec(
      { stopping: { rule: 'sequential', max_blocks: 6 } },
      { count: 6, reps_per_block: 'auto' },
    );
    assert.match(
      compileSpec(asked)
        .problems.map((p) => `${p.path.join('.')}: ${p.message}`)
        .join('\n'),
      /blocks\.reps_per_block: reps_per_block: auto: a sequential experiment/,
    );
    assert.match(
      compileSpec(residentSpec({}, { reps_per_block: 2 }))
        .problems.map((p) => p.message)
        .join('\n'),
      /reps_per_block: 2 is below reps: 3/,
    );
  });
});
