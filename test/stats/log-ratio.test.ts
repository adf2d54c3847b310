/**
 * `orch compare`'s relative change (orchestrator/stats/log-ratio.ts, used by
 * orchestrator/report/compare-results.ts): a CI from the log of block means never reaches
 * −100 %, where the linear difference over A's mean did on short runs; and it keeps its coverage
 * (a seeded simulation with a planted ratio, lognormal block means).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mulberry32, standardNormal } from '../../jobs/seeded-random.ts';
import { logRatio } from '../../orchestrator/stats/log-ratio.ts';
import { welchT } from '../../orchestrator/stats/welch.ts';

describe('logRatio', () => {
  it('two short, noisy runs: the linear CI goes below −100 %, the log-ratio CI does not', () => {
    const a = [10, 30];
    const b = [9, 12];
    const linear = welchT(a, b, 0.05);
    const base = (a[0]! + a[1]!) / 2;
    assert.ok(linear.ci![0] / base < -1, `the linear CI's lower end is ${linear.ci![0] / base}`);
    const r = logRatio(a, b, 0.05);
    assert.ok(r.relative.ci![0] > -1, `log-ratio lower end ${r.relative.ci![0]}`);
    assert.ok(r.relative.ci![0] < r.relative.estimate! && r.relative.estimate! < r.relative.ci![1]);
    // the estimate is the ratio of geometric means
    assert.ok(Math.abs(r.relative.estimate! - (Math.sqrt(9 * 12) / Math.sqrt(10 * 30) - 1)) < 1e-12);
  });

  it('no value to take a log of: null, not a number', () => {
    const r = logRatio([1, 0, 2], [1, 2, 3], 0.05);
    assert.equal(r.relative.estimate, null);
    assert.equal(r.relative.ci, null);
    assert.equal(r.welch.p, null);
  });

  it('covers a planted ratio about 95 % of the time (seeded, 2000 runs of 3 vs 4 blocks)', () => {
    const random = mulberry32(41);
    const planted = 1.1;
    let covered = 0;
    const runs = 2000;
    for (let i = 0; i < runs; i++) {
      const draw = (n: number, scale: number) =>
        Array.from({ length: n }, () => scale * Math.exp(0.2 * standardNormal(random)));
      const { relative } = logRatio(draw(3, 10), draw(4, 10 * planted), 0.05);
      assert.ok(relative.ci![0] > -1);
      if (relative.ci![0] <= planted - 1 && planted - 1 <= relative.ci![1]) covered++;
    }
    const share = covered / runs;
    // binomial sd at 2000 runs is 0.5 %; ±2 % is four of them
    assert.ok(Math.abs(share - 0.95) < 0.02, `coverage ${share}`);
  });
});
