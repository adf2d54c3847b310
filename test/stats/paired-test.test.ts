/**
 * The paired tests against well-kept oracles: Student's t against @stdlib's own ttest on seeded
 * reference data; Wilcoxon's exact p against a full enumeration of the 2^n sign flips (the
 * definition of the exact null distribution), its normal branch against @stdlib's wilcoxon.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import ttest from '@stdlib/stats-ttest';
import stdlibWilcoxon from '@stdlib/stats-wilcoxon';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import { pClause } from '../../orchestrator/stats/format-number.ts';
import { pairedT, wilcoxonSignedRank } from '../../orchestrator/stats/paired-test.ts';
import { gaussian, seeded, simulateExperiment, twoArms } from './simulate.ts';

const close = (a: number, b: number, what: string, rel = 1e-9) =>
  assert.ok(Math.abs(a - b) <= rel * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);

function sample(rng: () => number, n: number, shift: number, sd: number): number[] {
  return Array.from({ length: n }, () => shift + sd * gaussian(rng));
}

test('paired t: statistic, df, p and CI agree with @stdlib ttest on seeded reference data', () => {
  const rng = seeded(11);
  for (const [n, shift, alpha] of [
    [2, 0.3, 0.05],
    [5, 0, 0.05],
    [8, 0.5, 0.1],
    [12, -0.2, 0.01],
    [40, 0.05, 0.05],
  ] as const) {
    const d = sample(rng, n, shift, 1);
    const mine = pairedT(d, alpha);
    const lib = ttest(d, { alpha });
    close(mine.t!, lib.statistic, `t n=${n}`);
    assert.equal(mine.df, lib.df);
    close(mine.p!, lib.pValue, `p n=${n}`, 1e-7);
    close(mine.ci![0], lib.ci[0]!, `ci low n=${n}`, 1e-7);
    close(mine.ci![1], lib.ci[1]!, `ci high n=${n}`, 1e-7);
  }
});

test('a comparison is the paired t of ln(arm) − ln(reference) per pair, as @stdlib computes it', () => {
  const input = simulateExperiment(twoArms(39 / 40, { blocks: 3, reps: 4 }), seeded(12));
  const a = analyzeExperiment(input);
  const byKey = new Map(a.values.map((v) => [`${v.block}/${v.arm}/${v.rep}`, v.value]));
  const x: number[] = [];
  const y: number[] = [];
  for (const b of input.plan.blocks) {
    for (let k = 0; k < input.plan.reps; k++) {
      x.push(Math.log(byKey.get(`${b.index}/B/${k}`)!));
      y.push(Math.log(byKey.get(`${b.index}/A/${k}`)!));
    }
  }
  const lib = ttest(x, y, { alpha: input.alpha });
  const c = a.primary!;
  assert.equal(c.pairs, 12);
  close(c.log_ratio.t!, lib.statistic, 't');
  close(c.log_ratio.p!, lib.pValue, 'p', 1e-7);
  close(c.relative.ci![0], Math.expm1(lib.ci[0]!), 'ci low', 1e-7);
  close(c.relative.ci![1], Math.expm1(lib.ci[1]!), 'ci high', 1e-7);
  const w = stdlibWilcoxon(x, y);
  close(c.wilcoxon.p!, Math.min(1, w.pValue), 'wilcoxon p');
});

/** Exact two-sided p of W+ by enumerating every sign assignment (no ties, no zeros). */
function enumeratedSignedRankP(d: readonly number[]): number {
  const n = d.length;
  const order = d.map((x, i) => ({ a: Math.abs(x), i })).sort((p, q) => p.a - q.a);
  const rank = new Array<number>(n);
  for (const [r, o] of order.entries()) rank[o.i] = r + 1;
  const observed = d.reduce((s, x, i) => s + (x > 0 ? rank[i]! : 0), 0);
  const mid = (n * (n + 1)) / 4;
  let extreme = 0;
  for (let mask = 0; mask < 1 << n; mask++) {
    let w = 0;
    for (let i = 0; i < n; i++) if (mask & (1 << i)) w += i + 1;
    if (Math.abs(w - mid) >= Math.abs(observed - mid) - 1e-9) extreme++;
  }
  return extreme / (1 << n);
}

test('Wilcoxon signed-rank: exact p equals the enumerated null distribution (n = 3..14)', () => {
  const rng = seeded(13);
  for (let n = 3; n <= 14; n++) {
    const d = sample(rng, n, n % 3 === 0 ? 0.8 : 0.1, 1);
    const mine = wilcoxonSignedRank(d);
    assert.equal(mine.method, 'exact');
    close(mine.p!, enumeratedSignedRankP(d), `n=${n}`, 1e-9);
  }
});

test('Wilcoxon signed-rank: with ties the normal approximation matches @stdlib', () => {
  const d = [0.5, -0.5, 1, 1, 2, -0.25, 3, 0.75, 0.5, 2];
  const mine = wilcoxonSignedRank(d);
  assert.equal(mine.method, 'normal');
  close(mine.p!, stdlibWilcoxon(d).pValue, 'p');
  assert.deepEqual(wilcoxonSignedRank([0, 0, 0]), { w_plus: 0, p: 1, method: 'exact' });
});

test('a verdict the Wilcoxon check does not back says so (5 pairs: exact p cannot go below 1/16)', () => {
  const a = analyzeExperiment(
    simulateExperiment(twoArms(0.95, { blocks: 5, reps: 1 }), seeded(14), { min_effect: 0.01 }),
  );
  const c = a.primary!;
  assert.equal(c.verdict, 'faster');
  assert.equal(c.wilcoxon.method, 'exact');
  close(c.wilcoxon.p!, 2 / 2 ** 5, 'smallest exact two-sided p for n = 5');
  assert.ok(c.reasons.includes(`Wilcoxon signed-rank disagrees (${pClause(2 / 2 ** 5)} > 0.05)`), c.reasons.join('; '));
});
