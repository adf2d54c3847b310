/**
 * gates.base_reference end to end through `orch submit` (the embedded default), on the planted
 * repository (test/builds/planted-repo.ts: branch does 10 % more work per step than main). The
 * base arm `main` runs again from the reference build as `main_ref`, in the same blocks; the
 * gate passes only when the paired CI of main vs main_ref lies inside ±tolerance.
 *   - reference = main's own commit: the gate passes and the branch-vs-main verdict stands;
 *   - reference = branch (10 % slower), the same tolerance: the gate fails naming change, CI,
 *     build and tolerance, the CI wholly on the planted side; the verdict is invalid, exit 5.
 *
 * Both run under the same TOLERANCE and PAIRS, so the pair shows the gate tells a different
 * build from the same one, rather than failing the second only for a tolerance nobody could
 * meet. They are sized for a loaded 2-core box (load 8-12): there a rep (the median of 15
 * CPU-timed steps) varies by 5-7 % on its own, adjacent reps as much as distant ones (pairing
 * in time removes none of it), and a pair's log-ratio by 6-9 %. With the old 12 pairs and ±2 %
 * the same commit's CI spanned 6-12 points and failed the gate (CI −1.9..+3.8 %, −3.6..+6.1 %);
 * ±2 % would take ~200 pairs. With 48 pairs the CI spans 3.5-3.8 points around +0.4 % and
 * −0.7 %, but once −3.0 % (CI −4.8..−1.2 %, at load 12): hence ±6 %, not ±5 %.
 * A build 10 % slower sits at −9.1 % (measured −7.9..−9.8 %, CI ends −10.1..−11.8 %): outside.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { pct, signedPct } from '../../orchestrator/stats/format-number.ts';
import { runDecided } from '../utils/statistical-retry.ts';
import {
  freshBuildDir,
  PLANTED_ARMS,
  PLANTED_BUILDS,
  type PlantedRepo,
  plantedRepo,
  plantedSpec,
  type Submitted,
  submitSpec,
} from './planted-repo.ts';

/** The gate's tolerance in both cases (see above for why not tighter). */
const TOLERANCE = 0.06;
/** reps × blocks: the pairs of main and main_ref. */
const REPS = 12;
const BLOCKS = 4;
/** branch's extra work: main vs a reference build of it is −9.1 %, well beyond TOLERANCE. */
const EFFECT = 0.1;

/** The planted spec with a `ref` build at `refRef` checked against the base arm `main`. */
async function withReference(
  repo: PlantedRepo,
  name: string,
  refRef: string,
  tolerance: number,
  buildDir = freshBuildDir(),
): Promise<Submitted> {
  const spec = plantedSpec({
    name,
    builds: `${PLANTED_BUILDS}\n  ref: { ref: ${refRef} }`,
    arms: PLANTED_ARMS,
    reps: REPS,
    blocks: BLOCKS,
    gates: `{ identity: false, aa: false, base_reference: { build: ref, tolerance: ${tolerance} } }`,
  });
  const r = await submitSpec(join(repo.dir, `${name}.yaml`), spec, buildDir);
  assert.ok(r.summary && r.dir, r.output);
  return r;
}

/** The run's base-reference gate: it must be there. */
function gateOf(r: Submitted) {
  const gate = r.summary?.analysis.gates.find((g) => g.name === 'base_reference');
  assert.ok(gate, r.output);
  return gate;
}

/** The base arm against its reference, with the estimate and CI it must have. */
function pairedOf(r: Submitted) {
  const p = r.summary?.analysis.base_reference;
  assert.ok(p?.relative.ci && p.relative.estimate !== null, JSON.stringify(p));
  return { ...p, estimate: p.relative.estimate, ci: p.relative.ci };
}
const short = (commit: string) => commit.slice(0, 7);

describe('base-reference gate through orch submit', () => {
  test('base built from the same commit as the reference: the gate passes, the verdict stands, one build per commit', async () => {
    const repo = plantedRepo({ effect: EFFECT });
    const buildDir = freshBuildDir();
    const tolerance = TOLERANCE;
    // The gate passing and the verdict are statistical: a run that misses is run once more (the
    // builds come from the cache), and the second run's misses are what is asserted.
    const decided = await runDecided(
      () => withReference(repo, 'same-reference', 'main', tolerance, buildDir),
      (run) => [
        ...(gateOf(run).pass === true ? [] : [`gate: ${gateOf(run).message}`]),
        ...(run.summary!.analysis.verdict === (repo.planted > 0 ? 'slower' : 'faster')
          ? []
          : [`verdict ${run.summary!.analysis.verdict}: ${JSON.stringify(run.summary!.analysis.invalid_reasons)}`]),
      ],
    );
    assert.deepEqual(decided.misses, []);
    const r = decided.run;
    const a = r.summary!.analysis;
    const paired = pairedOf(r);
    const [lo, hi] = paired.ci;
    console.log(
      `main vs main_ref: ${signedPct(paired.estimate)} (CI ${signedPct(lo)} to ${signedPct(hi)}, ${paired.pairs} pairs), tolerance ±${pct(tolerance)}; gate: ${gateOf(r).message}`,
    );
    assert.equal(paired.pairs, REPS * BLOCKS);
    assert.equal(paired.arm, 'main');
    assert.equal(paired.reference, 'main_ref');
    assert.ok(gateOf(r).message.includes(`build ref@${short(repo.git('rev-parse', 'main'))}`), gateOf(r).message);
    // the reference arm is no treatment: branch vs main alone decides
    assert.deepEqual(
      a.comparisons.map((c) => `${c.arm} vs ${c.reference}`),
      ['branch vs main'],
    );
    assert.equal(a.verdict, repo.planted > 0 ? 'slower' : 'faster', JSON.stringify(a.invalid_reasons));
    assert.equal(r.code, repo.planted > 0 ? 4 : 0, r.output);
    assert.equal(readdirSync(join(buildDir, 'logs')).length, 2, 'main and ref are one commit: built once');
    assert.match(
      readFileSync(join(r.dir!, 'report.md'), 'utf8'),
      /\| base_reference \| pass \| base matches the reference: arm main is within/,
    );
    assert.equal(JSON.parse(readFileSync(join(r.dir!, 'report.json'), 'utf8')).base_reference.reference, 'main_ref');
  });

  test('a reference build 10 % slower, the same tolerance: the gate fails with change, CI and tolerance; verdict invalid, exit 5', async () => {
    const repo = plantedRepo({ effect: EFFECT });
    const tolerance = TOLERANCE;
    const buildDir = freshBuildDir();
    // main against the branch's commit: the planted effect, reversed
    const expected = 1 / (1 + repo.planted) - 1;
    // It fails for the difference, not for a CI too wide to decide: the CI lies wholly on the
    // planted side of 0 and crosses −tolerance there (a 95 % CI covering the planted value would
    // itself miss one run in twenty, more on a loaded box: not asserted). Statistical, so a run
    // that misses is run once more and the second run's misses are asserted.
    const decided = await runDecided(
      () => withReference(repo, 'slower-reference', 'branch', tolerance, buildDir),
      (run) => {
        const p = pairedOf(run);
        const [l, h] = p.ci;
        console.log(
          `main vs main_ref: ${signedPct(p.estimate)} (CI ${signedPct(l)} to ${signedPct(h)}, ${p.pairs} pairs), planted ${signedPct(expected)}, tolerance ±${pct(tolerance)}`,
        );
        return [
          ...(gateOf(run).pass === false ? [] : [`gate: ${gateOf(run).message}`]),
          ...(h < 0 ? [] : [`CI ${l}..${h} not below 0: main is faster than the slower reference`]),
          ...(l < -tolerance ? [] : [`CI ${l}..${h} does not reach below −${tolerance}`]),
          ...(Math.abs(p.estimate - expected) < tolerance
            ? []
            : [`estimate ${p.estimate} not near the planted ${expected}`]),
        ];
      },
    );
    assert.deepEqual(decided.misses, []);
    const r = decided.run;
    const gate = gateOf(r);
    const a = r.summary!.analysis;
    const paired = pairedOf(r);
    const [lo, hi] = paired.ci;
    assert.equal(a.verdict, 'invalid');
    assert.equal(r.code, 5, r.output);
    assert.equal(a.invalid_reasons[0], gate.message);
    assert.ok(
      gate.message.includes(
        `arm main differs from the reference build ref@${short(repo.git('rev-parse', 'branch'))} by ${signedPct(paired.estimate)} (95 % CI ${signedPct(lo)} to ${signedPct(hi)}, ${paired.pairs} pairs), outside ±${pct(tolerance)}`,
      ),
      gate.message,
    );
    const md = readFileSync(join(r.dir!, 'report.md'), 'utf8');
    assert.ok(md.indexOf(gate.message) < md.indexOf('## Gates'), 'the failed gate is said first');
    assert.match(md, /\| base_reference \| \*\*FAIL\*\* \| base-reference gate failed: /);
  });
});
