/**
 * `orch compare`'s "how much weaker than paired" (orchestrator/report/compare-results.ts
 * pairingRatio) pairs a run's block means by block index. Simulated: six blocks with a large
 * block effect; the reference has no values in block 1 and the arm none in block 2, so both have
 * five block means. Paired by their place in the list, block 2 of the reference met block 1 of the
 * arm (and so on up to block 3): the "paired" width held the block-to-block variance pairing
 * removes. Now only blocks 0, 3, 4 and 5 pair, each with itself, and the unpaired width is over the
 * same blocks.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pairingRatio } from '../../orchestrator/report/compare-results.ts';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import { pairedHalfWidth, welchT } from '../../orchestrator/stats/welch.ts';
import { seeded, simulateExperiment, twoArms } from '../stats/simulate.ts';

test('the paired width pairs block means by block, leaving out a block only one arm has', () => {
  const a = analyzeExperiment(simulateExperiment(twoArms(0.97, { blocks: 6, blockSd: 0.3 }), seeded(91)));
  const values = a.values.filter((v) => !(v.arm === 'A' && v.block === 1) && !(v.arm === 'B' && v.block === 2));
  const p = pairingRatio('run-a', { primary: a.primary, values }, 0.05)!;
  const mean = (arm: string, block: number) => {
    const xs = values.filter((v) => v.arm === arm && v.block === block).map((v) => v.value);
    return xs.reduce((s, x) => s + x, 0) / xs.length;
  };
  const shared = [0, 3, 4, 5];
  const ref = shared.map((b) => mean('A', b));
  const arm = shared.map((b) => mean('B', b));
  const paired = pairedHalfWidth(
    arm.map((x, i) => x - ref[i]!),
    0.05,
  )!;
  const ci = welchT(ref, arm, 0.05).ci!;
  const want = (ci[1] - ci[0]) / 2 / paired;
  assert.ok(Math.abs(p.ratio! - want) < 1e-9 * want, `ratio ${p.ratio} vs ${want}: ${p.message}`);
  assert.match(p.message, /over the same 4 blocks \(2 block\(s\) with only one of the two left out\)/);
  // pairing removed the planted block effect: the unpaired width is many times the paired one
  assert.ok(p.ratio! > 3, p.message);
});
