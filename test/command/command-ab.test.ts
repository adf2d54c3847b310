/**
 * Command workloads end to end through `orch submit` (the embedded default: a private
 * redis-server, the scheduler and a local worker per submit): the fixture program whose env
 * toggle halves its work, built by the spec's build, measured through the regex parser; five
 * experiments submitted together that share one build on this host; and the bad inputs, each a
 * clear error before or instead of any measurement.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { type SummaryJson, SummaryJsonSchema } from '../../orchestrator/results/summary-schema.ts';
import { FIXTURES, gitCheckout } from '../build/build-helpers.ts';
import { missedTwice } from '../utils/statistical-retry.ts';
import { ORCH_BIN } from '../utils/worker-process.ts';
import { speedySpec } from './speedy-spec.ts';

interface Submitted {
  code: number | null;
  output: string;
  summary: SummaryJson | null;
  /** the hello lines of the command ranks: which build they ran */
  hellos: { build: { key: string; outcome: string } | null }[];
  /** the outcome of each build the build phase made before any lease (block -1) */
  phase: string[];
}

async function submit(spec: string, buildDir: string): Promise<Submitted> {
  const dir = mkdtempSync(join(tmpdir(), 'orch-cmd-ab-'));
  const file = join(dir, 'speedy-ab.yaml');
  writeFileSync(file, spec);
  const results = join(dir, 'results');
  const child = spawn(process.execPath, [ORCH_BIN, 'submit', file, '--results', results], {
    env: { ...process.env, ORCH_BUILD_DIR: buildDir, ORCH_LOG: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const code = await new Promise<number | null>((r) => child.once('close', r));
  let summary: SummaryJson | null = null;
  const hellos: Submitted['hellos'] = [];
  const phase: string[] = [];
  try {
    const [exp] = readdirSync(results);
    summary = SummaryJsonSchema.parse(JSON.parse(readFileSync(join(results, exp!, 'summary.json'), 'utf8')));
    for (const line of readFileSync(join(results, exp!, 'events.jsonl'), 'utf8').split('\n')) {
      if (line.includes('"hello"') && line.includes('"command"')) {
        const ev = JSON.parse(line) as { event: unknown };
        const hello = (typeof ev.event === 'string' ? JSON.parse(ev.event) : ev.event) as Submitted['hellos'][number];
        hellos.push(hello);
      }
      if (line.includes('"build-end"')) {
        const ev = JSON.parse(line) as { block: number; event: { outcome: string } };
        if (ev.block === -1) phase.push(ev.event.outcome);
      }
    }
  } catch {
    // no results: the submit was refused before running (bad spec)
  }
  return { code, output, summary, hellos, phase };
}

const buildLogs = (buildDir: string) => {
  try {
    return readdirSync(join(buildDir, 'logs'));
  } catch {
    return [];
  }
};

describe('command workloads through orch submit', () => {
  test('A/B of the fixture program: built once by the spec, measured through the regex parser, the fast arm reported faster', async () => {
    const src = gitCheckout('cmd-speedy');
    const buildDir = mkdtempSync(join(tmpdir(), 'orch-builds-'));
    const r = await submit(speedySpec({ dir: src, reps: 6, steps: 15 }), buildDir);
    // a run that ended without results is no statistical miss
    assert.ok(r.summary, r.output);
    // The verdict, its effect and the A/A gate (exit 5 when it fails, alpha 0.05) are statistical:
    // a run that misses is run once more (test/utils/statistical-retry.ts); the build checks below
    // are of the first run.
    const misses = (run: typeof r): string[] => {
      const cmp = run.summary?.analysis.comparisons.find((c) => c.arm === 'fast' && c.reference === 'slow');
      const estimate = cmp?.relative.estimate;
      if (!cmp || estimate === null || estimate === undefined)
        return [`no comparison fast vs slow (exit ${run.code}): ${run.output.slice(-2000)}`];
      // The known effect: SPEEDY_FAST=1 halves the work of a step (−50 %); generous bounds for a busy CI box.
      return [
        ...(run.code === 0 ? [] : [`exit ${run.code}`]),
        ...(cmp.verdict === 'faster' ? [] : [`verdict ${cmp.verdict}: ${JSON.stringify(cmp)}`]),
        ...(estimate > -0.75 && estimate < -0.25 ? [] : [`fast vs slow ${estimate}`]),
      ];
    };
    assert.deepEqual(
      await missedTwice(() => submit(speedySpec({ dir: src, reps: 6, steps: 15 }), buildDir), misses, r),
      [],
      r.output,
    );
    const a = r.summary!.analysis;
    const cmp = a.comparisons.find((c) => c.arm === 'fast' && c.reference === 'slow');
    assert.ok(cmp?.relative.ci && cmp.relative.estimate !== null, JSON.stringify(a.comparisons));
    assert.equal(r.summary!.accounting.measured, r.summary!.accounting.planned);
    // built by the build phase before any lease; the rank's build is then a cache hit
    assert.deepEqual(r.phase, ['built']);
    assert.deepEqual(
      r.hellos.map((h) => h.build?.outcome),
      ['cached'],
    );
    const med = (arm: string) => a.arms.find((x) => x.arm === arm)?.median ?? Number.NaN;
    console.log(
      `A/B: slow median ${med('slow').toFixed(2)} ms, fast ${med('fast').toFixed(2)} ms, change ${(cmp.relative.estimate * 100).toFixed(1)} % (CI ${cmp.relative.ci.map((x: number) => (x * 100).toFixed(1)).join('..')} %), verdict ${a.verdict}`,
    );

    // A later experiment with the same build key reuses the artifact: no second build.
    // Two pairs decide nothing on a loaded box (t with 1 df): this run checks the cache, not the
    // effect, so it runs without the A/A gate, which with two pairs fails spuriously now and then
    // (a CI run read slow_aa vs slow +1.42 %, t = 134 from two pairs that happened to agree).
    const again = await submit(speedySpec({ dir: src, reps: 2, steps: 3, aa: false }), buildDir);
    assert.ok(again.code === 0 || again.code === 3, again.output);
    assert.deepEqual(again.phase, ['cached']);
    assert.deepEqual(
      again.hellos.map((h) => h.build?.outcome),
      ['cached'],
    );
    assert.equal(again.hellos[0]!.build!.key, r.hellos[0]!.build!.key);
    assert.equal(buildLogs(buildDir).length, 1);
  });

  test('five experiments submitted together on one host: exactly one build runs, all five use its artifact', async () => {
    const src = gitCheckout('cmd-speedy');
    const buildDir = mkdtempSync(join(tmpdir(), 'orch-builds-'));
    // The sleep keeps the build running while the other four submits reach it.
    const spec = speedySpec({ dir: src, buildCmd: 'sleep 4; sh build.sh', reps: 2, steps: 3 });
    const runs = await Promise.all(Array.from({ length: 5 }, () => submit(spec, buildDir)));
    for (const r of runs) {
      assert.equal(r.summary?.accounting.measured, r.summary?.accounting.planned, r.output);
      assert.equal(r.hellos.length, 1);
    }
    assert.equal(buildLogs(buildDir).length, 1, 'one build ran');
    assert.equal(new Set(runs.map((r) => r.hellos[0]!.build!.key)).size, 1);
    // each experiment's build phase asks for the build before any lease: one builds, the others share it
    const outcomes = runs.map((r) => r.phase[0]);
    assert.equal(outcomes.filter((o) => o === 'built').length, 1);
    for (const r of runs) assert.equal(r.hellos[0]!.build!.outcome, 'cached');
    console.log(`five submits: build outcomes ${outcomes.join(',')}; one build log`);
  });

  describe('bad input: a clear error naming the spec path, before or instead of any measurement', () => {
    test('a regex without the named group the metric needs: refused at submit with file:line', async () => {
      const buildDir = mkdtempSync(join(tmpdir(), 'orch-builds-'));
      const r = await submit(
        speedySpec({ dir: '/nonexistent', pattern: 'timer step (?<step>\\d+): total=([0-9.]+)ms' }),
        buildDir,
      );
      assert.equal(r.code, 2, r.output);
      assert.match(r.output, /speedy-ab\.yaml:\d+ workload\.metric_source\.pattern: .*named group "value"/);
      assert.equal(r.summary, null);
      assert.deepEqual(buildLogs(buildDir), [], 'nothing was built');
    });

    test('an artifact the build did not produce', async () => {
      const src = gitCheckout('cmd-no-artifact');
      const r = await submit(
        speedySpec({ dir: src, artifact: 'out/trainer' }),
        mkdtempSync(join(tmpdir(), 'orch-builds-')),
      );
      assert.equal(r.summary!.accounting.measured, 0);
      assert.match(
        r.summary!.reason ?? '',
        /BUILD_ARTIFACT_MISSING: workload\.build\.artifacts\[0\]: the build "sh build\.sh" exited 0 but did not produce "out\/trainer"/,
      );
      assert.match(r.summary!.reason ?? '', /\| built out\/trainer-v2/);
    });

    test('a build that exits non-zero: the last lines of its log', async () => {
      const src = gitCheckout('cmd-build-fails');
      const r = await submit(
        speedySpec({ dir: src, artifact: 'out/train' }),
        mkdtempSync(join(tmpdir(), 'orch-builds-')),
      );
      assert.equal(r.summary!.accounting.measured, 0);
      assert.match(
        r.summary!.reason ?? '',
        /BUILD_FAILED: workload\.build\.cmd: the build "sh build\.sh" in \S+ exited 2 after [0-9.]+ s; last lines of \S+\.log:/,
      );
      assert.match(r.summary!.reason ?? '', /\| collect2: error: ld returned 1 exit status/);
    });

    test('free disk below min_free_disk_gb: refused by preflight after the build, before the first rep', async () => {
      const src = gitCheckout('cmd-speedy');
      const r = await submit(
        speedySpec({ dir: src, reps: 2, steps: 3, extra: 'min_free_disk_gb: 1000000\n' }),
        mkdtempSync(join(tmpdir(), 'orch-builds-')),
      );
      assert.equal(r.summary!.accounting.measured, 0);
      assert.match(
        r.summary!.reason ?? '',
        /PREFLIGHT_DISK: min_free_disk_gb: \S+ has [0-9.]+ GB free, the spec asks for at least 1000000 GB/,
      );
    });

    test('a run command that prints no metric line', async () => {
      const r = await submit(
        speedySpec({ dir: '', build: false, runCmd: `sh ${join(FIXTURES, 'cmd-no-metric', 'run.sh')}` }),
        mkdtempSync(join(tmpdir(), 'orch-builds-')),
      );
      assert.equal(r.summary!.accounting.measured, 0);
      assert.match(
        r.summary!.reason ?? '',
        /METRIC_NO_LINES: workload\.metric_source: the run printed no metric line \(arm "\w+", command: sh \S+run\.sh\); last output:/,
      );
      assert.match(r.summary!.reason ?? '', /\| done/);
    });
  });
});
