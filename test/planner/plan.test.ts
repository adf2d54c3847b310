import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NAME_PATTERN } from '../../jobs/name-patterns.ts';
import { type Plan, planExperiment } from '../../jobs/plan.ts';
import { williamsRows } from '../../jobs/williams.ts';
import { balanceViolations, designRows, repsViolations, rounds } from './plan-properties.ts';
import { generateSpecs, loadRaw } from './spec-generator.ts';

const SPECS = generateSpecs(20261129, 400);
const plans = SPECS.map(({ loaded }) => planExperiment(loaded.spec, loaded.hash));

describe('planner properties over generated specs', () => {
  it('every arm appears reps times in every block, and nothing else does', () => {
    for (const plan of plans) assert.deepEqual(repsViolations(plan), [], plan.name);
    assert.ok(plans.some((p) => p.arms.length >= 6) && plans.some((p) => p.blocks.length >= 3));
  });

  it('a planner that drops the last rep is caught (planted bug)', () => {
    const buggy = plans.map((p) => ({
      ...p,
      blocks: p.blocks.map((b) => ({ ...b, sequence: b.sequence.slice(0, -1) })),
    }));
    for (const plan of buggy) assert.notDeepEqual(repsViolations(plan), [], plan.name);
  });

  it('balanced order: every ordered pair adjacent equally often and every arm at every position equally often', () => {
    let checked = 0;
    for (const plan of plans.filter((p) => p.order === 'balanced')) {
      const result = balanceViolations(plan);
      assert.deepEqual(result.violations, [], plan.name);
      checked += result.checked;
    }
    assert.ok(checked >= 100, `only ${checked} balance claims were exercised`);
  });

  it('a planner that repeats one Williams row is caught (planted bug)', () => {
    const repeated = plans.filter(
      (p) => p.order === 'balanced' && p.arms.length >= 3 && balanceViolations(p).checked > 0,
    );
    assert.ok(repeated.length >= 10);
    for (const plan of repeated) {
      const first = rounds(plan, plan.blocks[0]!.sequence)[0]!;
      const buggy: Plan = {
        ...plan,
        blocks: plan.blocks.map((b) => ({ ...b, sequence: Array.from({ length: plan.reps }, () => first).flat() })),
      };
      assert.deepEqual(repsViolations(buggy), []);
      assert.notDeepEqual(balanceViolations(buggy).violations, [], plan.name);
    }
  });

  it('identical spec and seed give an identical plan; random order depends on the seed', () => {
    let differ = 0;
    let randomPlans = 0;
    for (const { raw, loaded } of SPECS) {
      const again = loadRaw(structuredClone(raw), { collectionStyle: 'flow' });
      assert.deepEqual(planExperiment(again.spec, again.hash), planExperiment(loaded.spec, loaded.hash));
      if (loaded.spec.order === 'random' && loaded.spec.reps * (planExperiment(loaded.spec, '').arms.length - 1) >= 4) {
        randomPlans++;
        const other = loadRaw({ ...raw, seed: (loaded.spec.seed ?? 0) + 1 });
        if (
          JSON.stringify(planExperiment(other.spec, '').blocks) !==
          JSON.stringify(planExperiment(loaded.spec, '').blocks)
        )
          differ++;
      }
    }
    assert.ok(randomPlans >= 20, `only ${randomPlans} random-order specs generated`);
    assert.ok(differ >= randomPlans - 1, `${randomPlans - differ} of ${randomPlans} plans ignored the seed`);
  });

  it('arms follow the contract: names, control, the A/A copy', () => {
    for (const [i, plan] of plans.entries()) {
      const spec = SPECS[i]!.loaded.spec;
      const names = plan.arms.map((a) => a.name);
      assert.equal(new Set(names).size, names.length, 'arm names are unique');
      for (const a of plan.arms) {
        assert.match(a.name, NAME_PATTERN);
        assert.deepEqual(
          Object.keys(a.toggles).filter((t) => !(spec.sweep?.toggle === t)),
          spec.toggles,
          'every toggle assigned, in spec order',
        );
      }
      assert.ok(names.includes(plan.control));
      const aa = plan.arms.filter((a) => a.aa_of !== undefined);
      assert.equal(aa.length, spec.gates.aa ? 1 : 0);
      if (aa[0]) {
        assert.equal(aa[0].name, `${plan.control}_aa`);
        assert.deepEqual(aa[0].toggles, plan.arms.find((a) => a.name === plan.control)!.toggles);
      }
      const k = spec.toggles.length;
      const base = { ab: 2, 'leave-one-out': k + 2, sweep: spec.sweep?.values.length ?? 0, probe: 1 }[spec.design];
      assert.equal(plan.arms.length, base + (spec.gates.aa ? 1 : 0));
      assert.deepEqual(plan.toggles, spec.toggles);
      assert.equal(plan.blocks.length, spec.blocks.count);
    }
  });
});

describe('leave-one-out arms', () => {
  it('are base, all_on and all_on minus each toggle, control all_on', () => {
    const { spec, hash } = loadRaw({
      name: 'l',
      design: 'leave-one-out',
      workload: { runtime: 'native', kind: 'chain' },
      toggles: ['graph', 'pdl', 'overlap'],
    });
    const plan = planExperiment(spec, hash);
    assert.equal(plan.control, 'all_on');
    assert.deepEqual(
      plan.arms.map((a) => [a.name, a.toggles]),
      [
        ['base', { graph: false, pdl: false, overlap: false }],
        ['all_on', { graph: true, pdl: true, overlap: true }],
        ['no_graph', { graph: false, pdl: true, overlap: true }],
        ['no_pdl', { graph: true, pdl: false, overlap: true }],
        ['no_overlap', { graph: true, pdl: true, overlap: false }],
      ],
    );
  });
});

describe('ABBA for two arms', () => {
  it('rounds alternate AB, BA across rounds and blocks', () => {
    const { spec, hash } = loadRaw({
      name: 'ab',
      design: 'ab',
      workload: { runtime: 'native', kind: 'chain' },
      toggles: ['graph'],
      reps: 3,
      blocks: { count: 2 },
      arms: [
        { name: 'A', toggles: {} },
        { name: 'B', toggles: { graph: true } },
      ],
    });
    const plan = planExperiment(spec, hash);
    assert.deepEqual(
      plan.blocks.map((b) => b.sequence.join('')),
      ['ABBAAB', 'BAABBA'],
    );
  });

  it('with reps a multiple of the rows, blocks still start on different arms (ABBA, BAAB)', () => {
    for (const reps of [2, 4]) {
      const { spec, hash } = loadRaw({
        name: 'ab',
        design: 'ab',
        workload: { runtime: 'native', kind: 'chain' },
        toggles: ['graph'],
        reps,
        blocks: { count: 4 },
        arms: [
          { name: 'A', toggles: {} },
          { name: 'B', toggles: { graph: true } },
        ],
      });
      const firsts = planExperiment(spec, hash).blocks.map((b) => b.sequence[0]);
      assert.deepEqual(firsts, ['A', 'B', 'A', 'B'], `reps=${reps}`);
    }
  });
});

describe('williamsRows', () => {
  it('is a Latin design with every ordered pair adjacent R/n times (n = 1..16)', () => {
    for (let n = 1; n <= 16; n++) {
      const rows = williamsRows(n);
      assert.equal(rows.length, designRows(n));
      const names = Array.from({ length: n }, (_, i) => `a${i}`);
      const plan = {
        arms: names.map((name) => ({ name, toggles: {} })),
        reps: rows.length,
        blocks: [{ index: 0, sequence: rows.flat().map((i) => names[i]!) }],
      } as unknown as Plan;
      assert.deepEqual(balanceViolations(plan).violations, [], `n=${n}`);
    }
  });

  it('one square is not enough for odd n (why odd n uses the pair)', () => {
    for (const n of [3, 5, 7]) {
      const square = williamsRows(n).slice(0, n);
      const names = Array.from({ length: n }, (_, i) => `a${i}`);
      const plan = {
        arms: names.map((name) => ({ name, toggles: {} })),
        reps: n * 2,
        blocks: [{ index: 0, sequence: [...square, ...square].flat().map((i) => names[i]!) }],
      } as unknown as Plan;
      assert.notDeepEqual(balanceViolations(plan).violations, [], `n=${n}`);
    }
  });
});

describe('sweep arms', () => {
  it('a native param sweep: one arm per value, every toggle on, params overridden', () => {
    const { spec, hash } = loadRaw({
      name: 's',
      design: 'sweep',
      workload: { runtime: 'native', kind: 'decode' },
      toggles: ['graph'],
      sweep: { param: 'hidden', values: [256, 1024] },
    });
    const plan = planExperiment(spec, hash);
    assert.deepEqual(plan.arms, [
      { name: 'hidden-256', toggles: { graph: true }, params: { hidden: 256 } },
      { name: 'hidden-1024', toggles: { graph: true }, params: { hidden: 1024 } },
    ]);
    assert.equal(plan.control, 'hidden-256');
  });
});
