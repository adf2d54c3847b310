/**
 * Builds as arms end to end through `orch submit` (the embedded default): a throwaway git
 * repository whose branch does ~5 % more work per step than main (test/builds/planted-repo.ts),
 * a spec with one arm per ref, each commit built once in its own worktree; the planted
 * difference found with the right sign and a CI covering it; an A/A of one commit against
 * itself inconclusive; and the bad inputs, each refused before any measurement.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { missedTwice } from '../utils/statistical-retry.ts';
import {
  freshBuildDir,
  ONE_CARD,
  PLANTED_ARMS,
  PLANTED_BUILDS,
  plantedRepo,
  plantedSpec,
  submitSpec,
} from './planted-repo.ts';

describe('builds as arms: is my branch faster than main?', () => {
  test('one arm per commit: the planted difference, right sign, CI covering it; each commit built once in a worktree', async () => {
    const repo = plantedRepo();
    const buildDir = freshBuildDir();
    // 30 pairs (10 reps x 3 blocks): with the 12 of plantedSpec's default a CI run on a busy box
    // measured +3.41 % (CI -0.85..+7.86 %) for the planted +5 %, inconclusive: that run could only
    // detect 7.1 % with 80 % power. The paired nightly test needed the same.
    const submit = () =>
      submitSpec(
        join(repo.dir, 'branch-vs-main.yaml'),
        plantedSpec({ name: 'planted', builds: PLANTED_BUILDS, arms: PLANTED_ARMS, reps: 10, blocks: 3 }),
        buildDir,
        ONE_CARD,
      );
    const misses = (r: Awaited<ReturnType<typeof submitSpec>>): string[] => {
      assert.ok(r.summary, r.output);
      const a = r.summary.analysis;
      const cmp = a.comparisons.find((c) => c.arm === 'branch' && c.reference === 'main');
      assert.ok(cmp?.relative.ci && a.aa, JSON.stringify(a.comparisons));
      const [lo, hi] = cmp.relative.ci;
      const aa = a.aa;
      console.log(
        `branch vs main: ${((cmp.relative.estimate ?? Number.NaN) * 100).toFixed(2)} % (CI ${(lo * 100).toFixed(2)}..${(hi * 100).toFixed(2)} %), planted ${(repo.planted * 100).toFixed(2)} %, verdict ${cmp.verdict}; A/A ${aa.verdict}`,
      );
      return [
        ...(cmp.verdict === (repo.planted > 0 ? 'slower' : 'faster')
          ? []
          : [`verdict ${cmp.verdict}: ${JSON.stringify(cmp.reasons)}`]),
        ...(lo <= repo.planted && repo.planted <= hi
          ? []
          : [`CI ${lo}..${hi} does not cover the planted ${repo.planted}`]),
        ...(aa.verdict === 'inconclusive' ? [] : [`A/A ${aa.verdict}`]),
      ];
    };
    assert.deepEqual(await missedTwice(submit, misses), []);
    // One worktree per commit, each built once; the user's checkout never built.
    const commits = [repo.git('rev-parse', 'main'), repo.git('rev-parse', 'branch')].sort();
    assert.deepEqual(
      readdirSync(join(buildDir, 'worktrees'))
        .filter((f) => !f.endsWith('.ready'))
        .sort(),
      commits,
    );
    assert.equal(readdirSync(join(buildDir, 'logs')).length, 2);
    assert.equal(existsSync(join(repo.dir, 'out')), false, 'the checkout was not built in');
  });

  test('A/A: one commit against itself under two build names is inconclusive, built once', async () => {
    const repo = plantedRepo();
    const buildDir = freshBuildDir();
    const builds = '  one: { ref: main }\n  again: { ref: main }';
    const arms = '  - { name: one, build: one }\n  - { name: again, build: again }';
    const submit = () =>
      submitSpec(join(repo.dir, 'aa.yaml'), plantedSpec({ name: 'aa', builds, arms }), buildDir, ONE_CARD);
    const misses = (r: Awaited<ReturnType<typeof submitSpec>>): string[] => {
      assert.ok(r.summary, r.output);
      const primary = r.summary.analysis.primary;
      assert.ok(primary, 'a primary comparison');
      // inconclusive passes under the default --fail-on: exit 0
      return primary.verdict === 'inconclusive' && r.code === 0
        ? []
        : [`verdict ${primary.verdict}, exit ${r.code}: ${JSON.stringify(primary.reasons)}`];
    };
    assert.deepEqual(await missedTwice(submit, misses), []);
    assert.equal(readdirSync(join(buildDir, 'logs')).length, 1, 'one commit, one build');
  });

  describe('bad input: a clear error before any measurement, nothing written', () => {
    const refused = async (spec: string, pattern: RegExp) => {
      const repo = plantedRepo();
      const buildDir = freshBuildDir();
      const r = await submitSpec(join(repo.dir, 'bad.yaml'), spec, buildDir);
      assert.equal(r.code, 2, r.output);
      assert.match(r.output, pattern);
      assert.equal(r.dir, null, 'no results directory');
      assert.equal(existsSync(join(buildDir, 'logs')), false, 'nothing built');
    };

    test('a ref that does not exist: the file, line and ref named', () =>
      refused(
        plantedSpec({
          name: 'bad-ref',
          builds: '  main: { ref: main }\n  branch: { ref: no-such-branch }',
          arms: PLANTED_ARMS,
        }),
        /bad\.yaml:\d+ builds\.branch\.ref: ref "no-such-branch" of build "branch" does not name a commit in \S+/,
      ));

    test('two arms naming the same build and toggles: a duplicate arm', () =>
      refused(
        plantedSpec({
          name: 'dup',
          builds: PLANTED_BUILDS,
          arms: '  - { name: a, build: main }\n  - { name: b, build: main }',
        }),
        /arms "a" and "b" run the same build "main" and set the same toggles \(a duplicate arm\)/,
      ));

    test('an arm naming a build the spec does not define', () =>
      refused(
        plantedSpec({
          name: 'unknown',
          builds: PLANTED_BUILDS,
          arms: '  - { name: a, build: main }\n  - { name: b, build: brnach }',
        }),
        /arms\[1\]\.build: no build named "brnach" — did you mean "branch"/,
      ));
  });

  test('a commit whose build fails: the build, its commit, the command and the log tail; no rep measured', async () => {
    const repo = plantedRepo({ brokenBranch: true });
    const r = await submitSpec(
      join(repo.dir, 'broken.yaml'),
      plantedSpec({ name: 'broken', builds: PLANTED_BUILDS, arms: PLANTED_ARMS, reps: 2, blocks: 1 }),
      freshBuildDir(),
    );
    assert.ok(r.summary, r.output);
    assert.equal(r.summary.accounting.measured, 0);
    const commit = repo.git('rev-parse', 'branch');
    assert.match(
      r.summary.reason ?? '',
      new RegExp(
        `BUILD_FAILED: build "branch" \\(ref branch, commit ${commit}\\): workload\\.build\\.cmd: the build "sh build\\.sh" in \\S+ exited \\d+`,
      ),
    );
    assert.match(r.summary.reason ?? '', /\| .*error/);
  });
});
