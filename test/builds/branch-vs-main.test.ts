/**
 * Builds as arms end to end through `orch submit` (the embedded default): a throwaway git
 * repository whose branch does ~5 % more work per step than main (test/builds/planted-repo.ts),
 * a spec with one arm per ref, each commit built once in its own worktree; the planted
 * difference found with the right sign and a CI covering it; an A/A of one commit against
 * itself inconclusive; and the bad inputs, each refused before any measurement.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { runOrch, type OrchRun } from '../utils/orch-run.ts';
import { plantedRepo, plantedSpec } from './planted-repo.ts';

export interface Submitted extends OrchRun {
  results: string;
  dir: string | null;
  summary: Record<string, any> | null;
}

export async function submitSpec(file: string, text: string, buildDir: string): Promise<Submitted> {
  writeFileSync(file, text);
  const results = mkdtempSync(join(tmpdir(), 'orch-results-'));
  const r = await runOrch(['submit', file, '--results', results], { ORCH_BUILD_DIR: buildDir });
  const [exp] = readdirSync(results);
  const dir = exp === undefined ? null : join(results, exp);
  const summary = dir && existsSync(join(dir, 'summary.json')) ? JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) : null;
  return { ...r, results, dir, summary };
}

const ARMS = '  - { name: main, build: main }\n  - { name: branch, build: branch }';
const BUILDS = '  main: { ref: main }\n  branch: { ref: branch }';

describe('builds as arms: is my branch faster than main?', () => {
  test('one arm per commit: the planted difference, right sign, CI covering it; each commit built once in a worktree', async () => {
    const repo = plantedRepo();
    const buildDir = mkdtempSync(join(tmpdir(), 'orch-builds-'));
    const r = await submitSpec(join(repo.dir, 'branch-vs-main.yaml'), plantedSpec({ name: 'planted', builds: BUILDS, arms: ARMS }), buildDir);
    assert.ok(r.summary, r.output);
    const a = r.summary.analysis;
    const cmp = a.comparisons.find((c: any) => c.arm === 'branch' && c.reference === 'main');
    const [lo, hi] = cmp.relative.ci;
    console.log(`branch vs main: ${(cmp.relative.estimate * 100).toFixed(2)} % (CI ${(lo * 100).toFixed(2)}..${(hi * 100).toFixed(2)} %), planted ${(repo.planted * 100).toFixed(2)} %, verdict ${cmp.verdict}; A/A ${a.aa.verdict}`);
    assert.equal(cmp.verdict, repo.planted > 0 ? 'slower' : 'faster', JSON.stringify(cmp.reasons));
    assert.ok(lo <= repo.planted && repo.planted <= hi, `CI ${lo}..${hi} covers the planted ${repo.planted}`);
    assert.equal(a.aa.verdict, 'inconclusive');
    // One worktree per commit, each built once; the user's checkout never built.
    const commits = [repo.git('rev-parse', 'main'), repo.git('rev-parse', 'branch')].sort();
    assert.deepEqual(readdirSync(join(buildDir, 'worktrees')).filter((f) => !f.endsWith('.ready')).sort(), commits);
    assert.equal(readdirSync(join(buildDir, 'logs')).length, 2);
    assert.equal(existsSync(join(repo.dir, 'out')), false, 'the checkout was not built in');
  });
});
