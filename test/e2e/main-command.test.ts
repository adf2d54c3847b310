// The README's main command on a fresh clone, with no Redis running and REDIS_URL unset:
// `npm ci && npx orch submit configs/leave-one-out.yaml` ends with a verdict and writes results/<id>/ whose
// report has every arm of the plan with n = reps × blocks.
//
// The clone is a real `git clone` of this repository's committed HEAD. `npm ci` is replaced by
// what it does here, to save minutes: node_modules is copied from this checkout (cp -a; no
// network), and the postinstall native build is replaced by building only the graphrt target of
// the same CMake project with the CPU backend (GRAPHRT_CUDA=OFF: no GPU here, and the CUDA backend
// and the ctest executables take minutes on 2 cores). Then the user's command runs as written,
// through npx.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const sh = (cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env, timeout = 600_000) => {
  const t0 = Date.now();
  const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', timeout, maxBuffer: 64 << 20 });
  return { ...r, ms: Date.now() - t0 };
};

test('fresh clone: npx orch submit configs/leave-one-out.yaml with no Redis → a verdict, every arm n = reps × blocks', {
  timeout: 900_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'orch-e2e-'));
  try {
    const repo = join(dir, 'orch');
    const clone = sh('git', ['clone', '--quiet', process.cwd(), repo], dir);
    assert.equal(clone.status, 0, clone.stderr);
    const cp = sh('cp', ['-a', join(process.cwd(), 'node_modules'), join(repo, 'node_modules')], dir);
    assert.equal(cp.status, 0, cp.stderr);
    const configure = sh(
      'cmake',
      ['-S', 'native', '-B', 'native/build', '-DCMAKE_BUILD_TYPE=Release', '-DGRAPHRT_CUDA=OFF'],
      repo,
    );
    assert.equal(configure.status, 0, `${configure.stdout}\n${configure.stderr}`);
    const build = sh('cmake', ['--build', 'native/build', '--target', 'graphrt', '-j', '2'], repo);
    assert.equal(build.status, 0, `${build.stdout}\n${build.stderr}`);
    assert.ok(existsSync(join(repo, 'native/build/graphrt')));

    const env = { ...process.env };
    delete env.REDIS_URL;
    delete env.ORCH_PREFIX;
    delete env.ORCH_GRAPHRT;
    const run = sh('npx', ['orch', 'submit', 'configs/leave-one-out.yaml'], repo, env);
    console.log(
      `clone ${clone.ms} ms, node_modules copy ${cp.ms} ms, native build ${build.ms} ms, orch submit ${run.ms} ms (exit ${run.status})`,
    );
    // a run that ended before any results (exit 1 or 2) fails here, with its output
    const ids = existsSync(join(repo, 'results')) ? readdirSync(join(repo, 'results')) : [];
    assert.equal(ids.length, 1, `exit ${run.status}\n${run.stdout}\n${run.stderr}`);
    const out = join(repo, 'results', ids[0]!);
    for (const f of [
      'spec.yaml',
      'spec.hash',
      'events.jsonl',
      'summary.json',
      'report.md',
      'report.json',
      'arms.csv',
      'comparisons.csv',
      'loo.csv',
      'arms.svg',
      'drift.svg',
      'loo.svg',
    ])
      assert.ok(existsSync(join(out, f)), f);
    assert.equal(
      readFileSync(join(out, 'spec.yaml'), 'utf8'),
      readFileSync(join(repo, 'configs/leave-one-out.yaml'), 'utf8'),
    );
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as {
      state: string;
      hash: string;
      plan: { arms: { name: string }[]; reps: number; blocks: unknown[] };
      accounting: { planned: number; measured: number };
      analysis: { gates: { name: string; pass: boolean | null }[] };
    };
    // orch submit exits with the verdict's code: 0 faster, 3 inconclusive, 4 slower — each a run that
    // ended with a report. 5 (a gate failed) is one too only when the gate is the A/A alone: it
    // fails one run in twenty by design (alpha 0.05; a fresh-clone CI read −3.98 %, p = 0.013, on
    // the shared 2-core box). Identity or input failing, or 1 or 2, are not. The gates as the
    // analysis recorded them (summary.json), not as the report renders them.
    const gate = (name: string) => summary.analysis.gates.find((g) => g.name === name)?.pass;
    const aaOnly = run.status === 5 && gate('aa') === false && gate('identity') === true && gate('input') === true;
    assert.ok([0, 3, 4].includes(run.status ?? -1) || aaOnly, `exit ${run.status}\n${run.stdout}\n${run.stderr}`);
    if (aaOnly) console.log('the A/A gate failed (its false-positive rate is alpha); the run is checked as any other');
    assert.equal(summary.state, 'done');
    assert.equal(readFileSync(join(out, 'spec.hash'), 'utf8').trim(), summary.hash);
    const n = summary.plan.reps * summary.plan.blocks.length;
    // the report's arm table: | arm | n | planned | …
    const report = readFileSync(join(out, 'report.md'), 'utf8');
    assert.ok(run.stdout.includes(report.split('\n')[0]!), 'the report is printed');
    const arms = report.slice(report.indexOf('## Arms'));
    const rows = new Map(
      arms
        .slice(0, arms.indexOf('\n## ') > 0 ? arms.indexOf('\n## ') : undefined)
        .split('\n')
        .filter((l) => l.startsWith('| ') && !l.startsWith('| arm') && !l.startsWith('| ---'))
        .map((l) => l.split('|').map((c) => c.trim()))
        .map((c) => [c[1]!.split(' ')[0]!, Number(c[2])] as const),
    );
    for (const arm of summary.plan.arms)
      assert.equal(rows.get(arm.name), n, `arm ${arm.name}: n = ${rows.get(arm.name)}, want ${n}`);
    assert.equal(summary.accounting.measured, summary.accounting.planned);
    // nothing left running: no redis-server or graphrt of this run
    const ps = sh('ps', ['-eo', 'args'], dir).stdout;
    assert.ok(
      !ps.includes(repo),
      `processes of the run are still alive:\n${ps
        .split('\n')
        .filter((l) => l.includes(repo))
        .join('\n')}`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
