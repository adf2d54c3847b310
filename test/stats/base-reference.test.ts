/**
 * The base-reference gate as an equivalence test, through the real analyzeExperiment on seeded
 * simulated experiments: the base arm runs again from a reference build in the same blocks (the
 * plan's `ref_of` arm), planted at a known ratio to the base. The gate passes only when the
 * paired CI of base vs reference lies inside ±tolerance; the reference arm is never an ordinary
 * comparison. Every expected number is the analysis' own or computed from the planted means.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { outcomeExitCode } from '../../orchestrator/report/outcome-exit-code.ts';
import { renderMarkdown } from '../../orchestrator/report/render-markdown.ts';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import { withinTolerance } from '../../orchestrator/stats/equivalence.ts';
import { pct, signedPct } from '../../orchestrator/stats/format-number.ts';
import type { Analysis, AnalysisInput } from '../../orchestrator/stats/types.ts';
import { abWithAa, looExperiment } from './fixtures.ts';
import type { SimArm, SimParams } from './simulate.ts';

const COMMIT = 'abc1234def5678abc1234def5678abc1234def56';
const MU = 40;

/** The A/B of fixtures.ts (B planted 3 % faster) with the control A run again from the reference build at `MU · refRatio`. */
function withReference(
  seed: number,
  refRatio: number,
  tolerance: number,
  rest: Partial<SimParams> = {},
): AnalysisInput {
  const arms = [
    { name: 'A', mu: MU, toggles: {} },
    { name: 'B', mu: MU * 0.97, toggles: {} },
    { name: 'A_ref', mu: MU * refRatio, toggles: {}, ref_of: 'A' },
  ];
  return abWithAa(seed, { arms, ...rest }, { base_reference: { tolerance, build: { name: 'main', commit: COMMIT } } });
}

const gateOf = (a: Analysis) => a.gates.find((g) => g.name === 'base_reference')!;
/** base / reference − 1 of the planted means: what the paired comparison estimates. */
const plantedChange = (refRatio: number) => 1 / refRatio - 1;

describe('base-reference gate: base vs the same arm from the reference build, paired in blocks', () => {
  test('the same build as reference: the CI lies inside ±tolerance, the gate passes, the verdict stands', () => {
    const a = analyzeExperiment(withReference(41, 1, 0.02));
    const paired = a.base_reference!;
    assert.equal(paired.arm, 'A');
    assert.equal(paired.reference, 'A_ref');
    assert.equal(paired.pairs, 12, 'every block pairs every rep of base with its reference');
    assert.ok(
      paired.relative.ci![0] <= plantedChange(1) && plantedChange(1) <= paired.relative.ci![1],
      `CI ${paired.relative.ci} covers 0`,
    );
    assert.ok(withinTolerance(paired.relative.ci!, 0.02), `CI ${paired.relative.ci} inside ±2 %`);
    const gate = gateOf(a);
    assert.equal(gate.pass, true, gate.message);
    assert.ok(gate.message.includes('build main@abc1234'), gate.message);
    assert.ok(gate.message.includes(signedPct(paired.relative.estimate)), gate.message);
    // the reference arm is a check, not a treatment: no comparison, and the A/B verdict is B's
    assert.deepEqual(
      a.comparisons.map((c) => `${c.arm} vs ${c.reference}`),
      ['B vs A'],
    );
    assert.equal(a.primary!.arm, 'B');
    assert.equal(a.verdict, 'faster');
    assert.equal(outcomeExitCode(a), 0);
    assert.ok(
      a.arms.some((s) => s.arm === 'A_ref' && s.n === 12),
      'its reps are still summarized',
    );
  });

  test('a reference 5 % slower with tolerance 1 %: the gate fails with change, CI and tolerance; verdict invalid, exit 5', () => {
    const refRatio = 1.05;
    const a = analyzeExperiment(withReference(42, refRatio, 0.01));
    const paired = a.base_reference!;
    const [lo, hi] = paired.relative.ci!;
    assert.ok(
      lo <= plantedChange(refRatio) && plantedChange(refRatio) <= hi,
      `CI ${lo}..${hi} covers the planted ${plantedChange(refRatio)}`,
    );
    const gate = gateOf(a);
    assert.equal(gate.pass, false);
    assert.equal(a.verdict, 'invalid');
    assert.equal(outcomeExitCode(a), 5);
    const first = a.invalid_reasons[0]!;
    assert.equal(first, gate.message);
    assert.ok(
      first.includes(
        `arm A differs from the reference build main@abc1234 by ${signedPct(paired.relative.estimate)} (95 % CI ${signedPct(lo)} to ${signedPct(hi)}, ${paired.pairs} pairs), outside ±${pct(0.01)}`,
      ),
      first,
    );
    for (const c of a.comparisons) assert.equal(c.verdict, 'invalid');
    assert.match(
      renderMarkdown(a),
      /\| base_reference \| \*\*FAIL\*\* \| base-reference gate failed: arm A differs from the reference build main@abc1234/,
    );
  });

  test('equivalence, not difference: an estimate inside ±tolerance whose CI reaches beyond it fails', () => {
    // noisy reps: the CI is wider than the tolerance band, so sameness cannot be shown
    const a = analyzeExperiment(withReference(43, 1.003, 0.01, { sigma: 0.03, blocks: 2, reps: 2 }));
    const paired = a.base_reference!;
    assert.ok(Math.abs(paired.relative.estimate!) < 0.01, `estimate ${paired.relative.estimate} inside ±1 %`);
    assert.ok(!withinTolerance(paired.relative.ci!, 0.01), `CI ${paired.relative.ci} reaches beyond ±1 %`);
    assert.equal(paired.verdict, 'inconclusive', 'as a difference it shows nothing');
    assert.equal(gateOf(a).pass, false, gateOf(a).message);
    assert.equal(a.verdict, 'invalid');
  });

  test('leave-one-out: base_ref is paired with base, kept out of the worth table and the comparisons', () => {
    const fromReference = (arms: readonly SimArm[]) => [
      { ...arms.find((x) => x.name === 'base')!, name: 'base_ref', ref_of: 'base' },
    ];
    const a = analyzeExperiment(
      looExperiment(44, { base_reference: { tolerance: 0.02, build: { name: 'main', commit: null } } }, fromReference),
    );
    assert.equal(a.base_reference!.arm, 'base');
    assert.equal(a.base_reference!.reference, 'base_ref');
    assert.equal(gateOf(a).pass, true, gateOf(a).message);
    assert.ok(gateOf(a).message.includes('the reference build main:'), gateOf(a).message);
    assert.ok(!a.comparisons.some((c) => c.arm === 'base_ref'));
    assert.deepEqual(
      a.loo!.rows.map((r) => r.arm),
      ['no_pdl', 'no_kda', 'no_proj'],
    );
    assert.equal(a.verdict, 'faster');
  });

  test('no gates.base_reference: the gate is not applied', () => {
    const input = withReference(45, 1, 0.02);
    delete input.base_reference;
    const gate = gateOf(analyzeExperiment(input));
    assert.equal(gate.pass, null);
    assert.match(gate.message, /^not applied/);
  });
});
