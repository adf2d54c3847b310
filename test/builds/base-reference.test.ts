/**
 * gates.base_reference end to end through `orch submit` (the embedded default), on the planted
 * repository (test/builds/planted-repo.ts: branch does ~5 % more work per step than main). The
 * base arm `main` runs again from the reference build as `main_ref`, in the same blocks; the
 * gate passes only when the paired CI of main vs main_ref lies inside ±tolerance.
 *   - reference = main's own commit: the gate passes and the branch-vs-main verdict stands;
 *   - reference = branch (5 % slower), tolerance 1 %: the gate fails naming change, CI, build
 *     and tolerance; the verdict is invalid and orch exits 5.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { pct, signedPct } from '../../orchestrator/stats/format-number.ts';
import { PLANTED_ARMS, PLANTED_BUILDS, freshBuildDir, plantedRepo, plantedSpec, submitSpec, type PlantedRepo, type Submitted } from './planted-repo.ts';

/** The planted spec with a `ref` build at `refRef` checked against the base arm `main`. */
async function withReference(repo: PlantedRepo, name: string, refRef: string, tolerance: number, buildDir = freshBuildDir()): Promise<Submitted> {
  const spec = plantedSpec({
    name,
    builds: `${PLANTED_BUILDS}\n  ref: { ref: ${refRef} }`,
    arms: PLANTED_ARMS,
    gates: `{ identity: false, aa: false, base_reference: { build: ref, tolerance: ${tolerance} } }`,
  });
  const r = await submitSpec(join(repo.dir, `${name}.yaml`), spec, buildDir);
  assert.ok(r.summary && r.dir, r.output);
  return r;
}

const gateOf = (r: Submitted) => r.summary!.analysis.gates.find((g: any) => g.name === 'base_reference');
const short = (commit: string) => commit.slice(0, 7);

describe('base-reference gate through orch submit', () => {
  test('base built from the same commit as the reference: the gate passes, the verdict stands, one build per commit', async () => {
    const repo = plantedRepo();
    const buildDir = freshBuildDir();
    const tolerance = 0.02;
    const r = await withReference(repo, 'same-reference', 'main', tolerance, buildDir);
    assert.equal(gateOf(r).pass, true, gateOf(r).message);
    const a = r.summary!.analysis;
    const paired = a.base_reference;
    const [lo, hi] = paired.relative.ci;
    console.log(`main vs main_ref: ${signedPct(paired.relative.estimate)} (CI ${signedPct(lo)} to ${signedPct(hi)}), tolerance ±${pct(tolerance)}; gate: ${gateOf(r).message}`);
    assert.equal(paired.arm, 'main');
    assert.equal(paired.reference, 'main_ref');
    assert.ok(gateOf(r).message.includes(`build ref@${short(repo.git('rev-parse', 'main'))}`), gateOf(r).message);
    // the reference arm is no treatment: branch vs main alone decides
    assert.deepEqual(a.comparisons.map((c: any) => `${c.arm} vs ${c.reference}`), ['branch vs main']);
    assert.equal(a.verdict, repo.planted > 0 ? 'slower' : 'faster', JSON.stringify(a.invalid_reasons));
    assert.equal(r.code, repo.planted > 0 ? 4 : 0, r.output);
    assert.equal(readdirSync(join(buildDir, 'logs')).length, 2, 'main and ref are one commit: built once');
    assert.match(readFileSync(join(r.dir!, 'report.md'), 'utf8'), /\| base_reference \| pass \| base matches the reference: arm main is within/);
    assert.equal(JSON.parse(readFileSync(join(r.dir!, 'report.json'), 'utf8')).base_reference.reference, 'main_ref');
  });

  test('a reference 5 % slower with tolerance 1 %: the gate fails with change, CI and tolerance; verdict invalid, exit 5', async () => {
    const repo = plantedRepo();
    const tolerance = 0.01;
    const r = await withReference(repo, 'slower-reference', 'branch', tolerance);
    const gate = gateOf(r);
    assert.equal(gate.pass, false, gate.message);
    const a = r.summary!.analysis;
    const paired = a.base_reference;
    const [lo, hi] = paired.relative.ci;
    // main against the branch's commit: the planted effect, reversed
    const expected = 1 / (1 + repo.planted) - 1;
    console.log(`main vs main_ref: ${signedPct(paired.relative.estimate)} (CI ${signedPct(lo)} to ${signedPct(hi)}), planted ${signedPct(expected)}`);
    assert.ok(lo <= expected && expected <= hi, `CI ${lo}..${hi} covers the planted ${expected}`);
    assert.equal(a.verdict, 'invalid');
    assert.equal(r.code, 5, r.output);
    assert.equal(a.invalid_reasons[0], gate.message);
    assert.ok(
      gate.message.includes(`arm main differs from the reference build ref@${short(repo.git('rev-parse', 'branch'))} by ${signedPct(paired.relative.estimate)} (95 % CI ${signedPct(lo)} to ${signedPct(hi)}, ${paired.pairs} pairs), outside ±${pct(tolerance)}`),
      gate.message,
    );
    const md = readFileSync(join(r.dir!, 'report.md'), 'utf8');
    assert.ok(md.indexOf(gate.message) < md.indexOf('## Gates'), 'the failed gate is said first');
    assert.match(md, /\| base_reference \| \*\*FAIL\*\* \| base-reference gate failed: /);
  });
});
