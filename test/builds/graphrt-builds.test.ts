/**
 * graphrt builds as arms end to end through `orch submit` (the embedded default): a throwaway
 * clone of this repository whose branch `mine` plants a known amount of extra work in graphrt's
 * chain workload (half again as many kernels per step), a native spec with one arm per commit,
 * each commit's graphrt built once (CPU backend, GRAPHRT_CUDA=OFF) in its own worktree through
 * the build cache; the planted difference found with the right sign, the identity gate passing on
 * both graph arms, both builds' commits in summary.json. Then the base-reference gate of a native
 * spec (the base arm again from a build, next to this checkout's graphrt on the same card), and
 * the bad inputs: a ref that does not exist, a duplicate arm, a build whose graphrt speaks another
 * protocol. One build directory serves every case, so each commit is built once.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { UserInputError } from '../../jobs/errors.ts';
import { checkGraphrtBuildProtocol, graphrtCudaChoice, graphrtRecipe } from '../../worker/builds/graphrt-build.ts';
import { runOrch } from '../utils/orch-run.ts';
import { missedTwice } from '../utils/statistical-retry.ts';
import { freshBuildDir, ONE_CARD, submitSpec } from './planted-repo.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/**
 * The chain workload's kernels per step: `mine` runs KERNELS + KERNELS / 2. A busy box can add a
 * constant to every timed step of the CPU backend: beside two busy loops at nice 19 (the long lane's
 * builds run so in npm test), one run at 4096 kernels read main's step at 1.00 ms and mine's at 1.33
 * (0.71 and 1.05 idle), the planted +50 % as +31 %; three more read +50 to +64 %, and a CI run once
 * read +17 %. At 16384 kernels a step is about 2.6 ms, so such a constant is a quarter as large
 * beside it (the same loops: +39 to +59 % in five runs).
 */
const KERNELS = 16384;
const PLANTED = 0.5;
// CPU builds keep the CI time down: the embedded worker builds each commit's graphrt with the
// GRAPHRT_CUDA of its environment, as npm run build does (orch submit inherits this process's).
process.env.GRAPHRT_CUDA = 'OFF';

interface Clone {
  dir: string;
  git(...args: string[]): string;
}

/** A clone of this repository's HEAD with branch `mine`: chain runs half again as many kernels per step. */
function cloneWithPlantedWork(): Clone {
  const dir = join(mkdtempSync(join(tmpdir(), 'orch-graphrt-clone-')), 'orch');
  const r = spawnSync('git', ['clone', '-q', '--local', '--no-hardlinks', ROOT, dir], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const git = (...args: string[]): string => {
    const g = spawnSync('git', ['-c', 'user.email=t@orch', '-c', 'user.name=orch-test', ...args], {
      cwd: dir,
      encoding: 'utf8',
    });
    if (g.status !== 0) throw new Error(`git ${args.join(' ')}: ${g.stderr}`);
    return g.stdout.trim();
  };
  git('checkout', '-q', '-B', 'main');
  git('checkout', '-qb', 'mine');
  const file = join(dir, 'native/src/workloads/chain.cpp');
  const src = readFileSync(file, 'utf8');
  const planted = src.replace('k < kernels_;', 'k < kernels_ + kernels_ / 2;');
  assert.notEqual(planted, src, "the chain workload's kernel loop is where the test plants its work");
  writeFileSync(file, planted);
  git('commit', '-qam', 'chain: half again as many kernels per step (planted)');
  return { dir, git };
}

function nativeSpec(o: { name: string; builds: string; arms: string; gates?: string; reps?: number }): string {
  return `name: ${o.name}
design: ab
builds:
${o.builds}
workload:
  runtime: native
  backend: cpu
  kind: chain
  params: { kernels: ${KERNELS} }
  warmup: 2
  steps: 10
toggles: [graph]
arms:
${o.arms}
reps: ${o.reps ?? 8}
blocks: { count: 2 }
gates: ${o.gates ?? '{ identity: { replays: 3 }, aa: false }'}
metric: { name: ms_per_step, better: lower }
`;
}

const BUILDS = '  main: { ref: main }\n  mine: { ref: mine }';
const ARMS =
  '  - { name: main, build: main, toggles: { graph: true } }\n  - { name: mine, build: mine, toggles: { graph: true } }';

describe('graphrt builds as arms: is my branch of graphrt faster than main?', () => {
  let clone: Clone;
  const buildDir = freshBuildDir();
  before(() => {
    clone = cloneWithPlantedWork();
  });

  test('one arm per commit: the planted work found slower, identity passing on both graph arms, both commits in summary.json', async () => {
    const started = Date.now();
    const submit = () =>
      submitSpec(
        join(clone.dir, 'graphrt-ab.yaml'),
        nativeSpec({ name: 'graphrt-planted', builds: BUILDS, arms: ARMS }),
        buildDir,
        ONE_CARD,
      );
    const r = await submit();
    assert.ok(r.summary, r.output);
    const a = r.summary.analysis;
    // The planted work found slower is statistical, and a loaded box dilutes it (KERNELS says how
    // much). A run that misses is run once more (the builds come from the cache); a real fault (the
    // planted work not reaching the arm, a wrong sign, two builds of one commit) misses both, and a
    // miss names both arms' steps so that CI's closing list says what was read.
    const misses = (run: typeof r): string[] => {
      const cmp = run.summary?.analysis.comparisons.find((c) => c.arm === 'mine' && c.reference === 'main');
      if (!cmp?.relative.ci) return [`no mine vs main comparison: ${run.output.slice(-2000)}`];
      const [lo, hi] = cmp.relative.ci;
      const estimate = cmp.relative.estimate ?? Number.NaN;
      console.log(
        `mine vs main: ${(estimate * 100).toFixed(1)} % (CI ${(lo * 100).toFixed(1)}..${(hi * 100).toFixed(1)} %), planted +${PLANTED * 100} % kernels, verdict ${cmp.verdict}; ${((Date.now() - started) / 1000).toFixed(0)} s with both builds`,
      );
      const found = [
        ...(cmp.verdict === 'slower' ? [] : [`verdict ${cmp.verdict}: ${JSON.stringify(cmp.reasons)}`]),
        ...(lo > 0 ? [] : [`CI ${lo}..${hi} not above 0`]),
        // Only a floor, well clear of no effect: a shared box's preemption moves the estimate both
        // ways, and its constant per step pulls it towards 0 (KERNELS).
        ...(estimate > PLANTED / 4 ? [] : [`estimate ${estimate} of the planted ${PLANTED}`]),
      ];
      const steps = (run.summary?.analysis.arms ?? []).map((arm) => `${arm.arm} ${arm.median} ms (n ${arm.n})`);
      return found.length === 0 ? [] : [...found, `median steps: ${steps.join(', ')}`];
    };
    assert.deepEqual(await missedTwice(submit, misses, r), []);
    const identity = a.gates.find((g) => g.name === 'identity');
    // 2 graph arms (one per build) x 2 blocks
    assert.ok(identity?.pass, JSON.stringify(a.gates));
    assert.match(identity.message, /in 4 check\(s\)/);
    const builds = Object.fromEntries((a.provenance?.builds ?? []).map((b) => [b.name, b.commit]));
    assert.deepEqual(builds, { main: clone.git('rev-parse', 'main'), mine: clone.git('rev-parse', 'mine') });
    // Each commit built once, in its own worktree; the clone itself never built in.
    assert.deepEqual(
      readdirSync(join(buildDir, 'worktrees'))
        .filter((f) => !f.endsWith('.ready'))
        .sort(),
      [clone.git('rev-parse', 'main'), clone.git('rev-parse', 'mine')].sort(),
    );
    assert.equal(readdirSync(join(buildDir, 'logs')).length, 2);
    assert.equal(existsSync(join(clone.dir, 'native/build-orch-off')), false, 'the clone was not built in');
  });

  test("gates.base_reference on a native spec: the base arm again from the reference build, next to this checkout's graphrt", async () => {
    // the base arm (the first) is a graph arm: its short steps are the least noisy on a shared box
    const arms = '  - { name: graph, toggles: { graph: true } }\n  - { name: eager, toggles: {} }';
    const r = await submitSpec(
      join(clone.dir, 'graphrt-ref.yaml'),
      nativeSpec({
        name: 'graphrt-ref',
        builds: '  main: { ref: main }',
        arms,
        gates: '{ identity: { replays: 3 }, aa: false, base_reference: { build: main, tolerance: 0.5 } }',
        reps: 3,
      }),
      buildDir,
    );
    assert.ok(r.summary, r.output);
    const a = r.summary.analysis;
    const gate = a.gates.find((g) => g.name === 'base_reference');
    assert.ok(gate, JSON.stringify(a.gates));
    console.log(`base reference: ${gate.message}`);
    assert.notEqual(gate.pass, null, JSON.stringify(gate));
    assert.equal(r.summary.accounting.measured, r.summary.accounting.planned, JSON.stringify(r.summary.accounting));
    const refReps = Object.entries(r.summary.accounting.reps).filter(
      ([k, v]) => k.split('/')[1] === 'graph_ref' && v.fate === 'measured',
    );
    assert.equal(refReps.length, 6, 'the reference arm measured in both blocks');
    // main's graphrt comes from the cache when the first case built it
    assert.ok(readdirSync(join(buildDir, 'logs')).length <= 2, 'no build beyond main and mine');
  });

  test("leave-one-out over the toggles of one build (build: at spec level): every arm runs that build's graphrt", async () => {
    const spec = nativeSpec({ name: 'graphrt-loo', builds: BUILDS, arms: '  []', reps: 2 })
      .replace('design: ab', 'design: leave-one-out\nbuild: mine')
      .replace('toggles: [graph]', 'toggles: [graph, pdl]')
      .replace(/arms:\n {2}\[\]\n/, '');
    const logs = () => (existsSync(join(buildDir, 'logs')) ? readdirSync(join(buildDir, 'logs')).length : 0);
    const before = logs();
    const r = await submitSpec(join(clone.dir, 'graphrt-loo.yaml'), spec, buildDir);
    assert.ok(r.summary, r.output);
    assert.equal(r.summary.accounting.measured, r.summary.accounting.planned, JSON.stringify(r.summary.accounting));
    assert.deepEqual((r.summary.analysis.provenance?.builds ?? []).map((b) => b.name).sort(), ['main', 'mine']);
    assert.equal(r.summary.analysis.gates.find((g) => g.name === 'identity')?.pass, true);
    if (before > 0) assert.equal(logs(), before, 'mine was built once, by the first case');
    else assert.equal(logs(), 1, 'mine alone was built: no arm runs main');
  });

  describe('bad input', () => {
    test('a native spec with builds validates; a ref that does not exist fails with file, line and fix', async () => {
      const ok = join(clone.dir, 'ok.yaml');
      writeFileSync(ok, nativeSpec({ name: 'ok', builds: BUILDS, arms: ARMS }));
      const v = await runOrch(['validate', ok]);
      assert.equal(v.code, 0, v.output);
      const bad = join(clone.dir, 'bad-ref.yaml');
      writeFileSync(
        bad,
        nativeSpec({ name: 'bad', builds: '  main: { ref: main }\n  mine: { ref: no-such-branch }', arms: ARMS }),
      );
      const b = await runOrch(['validate', bad]);
      assert.equal(b.code, 2, b.output);
      assert.match(
        b.output,
        /bad-ref\.yaml:\d+ builds\.mine\.ref: ref "no-such-branch" of build "mine" does not name a commit/,
      );
      assert.match(b.output, /git branch -a/);
    });

    test('two arms naming the same build and toggles: a duplicate arm', async () => {
      const f = join(clone.dir, 'dup.yaml');
      writeFileSync(
        f,
        nativeSpec({
          name: 'dup',
          builds: BUILDS,
          arms: '  - { name: a, build: mine, toggles: { graph: true } }\n  - { name: b, build: mine, toggles: { graph: true } }',
        }),
      );
      const r = await runOrch(['validate', f]);
      assert.equal(r.code, 2, r.output);
      assert.match(r.output, /arms "a" and "b" run the same build "mine" and set the same toggles \(a duplicate arm\)/);
    });

    test('a commit whose graphrt does not build: the build, its commit, the command and the log tail; nothing measured', async () => {
      clone.git('checkout', '-qb', 'broken', 'main');
      const cmake = join(clone.dir, 'native/CMakeLists.txt');
      writeFileSync(
        cmake,
        `message(FATAL_ERROR "orch-test: the planted configure failure")\n${readFileSync(cmake, 'utf8')}`,
      );
      clone.git('commit', '-qam', 'native: a configure that fails (planted)');
      clone.git('checkout', '-q', 'main');
      const commit = clone.git('rev-parse', 'broken');
      const r = await submitSpec(
        join(clone.dir, 'broken.yaml'),
        nativeSpec({
          name: 'graphrt-broken',
          builds: '  main: { ref: main }\n  broken: { ref: broken }',
          arms: ARMS.replace('build: mine', 'build: broken'),
          reps: 2,
        }),
        buildDir,
      );
      assert.equal(r.code, 2, r.output);
      assert.ok(r.summary, r.output);
      assert.equal(r.summary.accounting.measured, 0);
      assert.match(
        r.summary.reason ?? '',
        new RegExp(
          `BUILD_FAILED: build "broken" \\(ref broken, commit ${commit}\\): graphrt\\.cmd: the build "cmake -S native -B native/build-orch-off -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_CUDA=OFF && cmake --build native/build-orch-off --target graphrt -j .*" in \\S+ exited 1 after [0-9.]+ s; last lines of \\S+:\\n`,
        ),
      );
      assert.match(r.summary.reason ?? '', /\| .*orch-test: the planted configure failure/);
    });

    test("the recipe follows the worker's GRAPHRT_CUDA: one key per choice, a bad value refused", () => {
      const off = graphrtRecipe('OFF');
      const on = graphrtRecipe('ON');
      assert.notEqual(off.cmd, on.cmd);
      assert.deepEqual([off.key.flags, on.key.flags], [['GRAPHRT_CUDA=OFF'], ['GRAPHRT_CUDA=ON']]);
      assert.ok(
        on.key.toolchain.some((t) => t.includes('nvcc --version')) &&
          !off.key.toolchain.some((t) => t.includes('nvcc')),
      );
      assert.equal(graphrtCudaChoice({ GRAPHRT_CUDA: 'auto' }), 'AUTO');
      assert.equal(graphrtCudaChoice({}), 'AUTO');
      assert.throws(
        () => graphrtCudaChoice({ GRAPHRT_CUDA: 'yes' }),
        (err: UserInputError) => err.code === 'GRAPHRT_CUDA_CHOICE' && /GRAPHRT_CUDA="yes"/.test(err.message),
      );
    });

    test('a build whose graphrt speaks another protocol is refused naming the build, the commit and what differs', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'orch-old-graphrt-'));
      const hello = (line: object) => {
        const bin = join(dir, `graphrt-${Math.random().toString(36).slice(2)}`);
        writeFileSync(bin, `#!/bin/sh\necho '${JSON.stringify(line)}'\n`);
        chmodSync(bin, 0o755);
        return bin;
      };
      const current = JSON.parse(
        spawnSync(join(ROOT, 'native/build/graphrt'), ['hello', '--backend', 'cpu'], { encoding: 'utf8' })
          .stdout.trim()
          .split('\n')[0] as string,
      );
      const req = { name: 'old', ref: 'v0', commit: 'c'.repeat(40) };
      const refused = async (bin: string, what: RegExp) => {
        await assert.rejects(checkGraphrtBuildProtocol(bin, req), (err: Error) => {
          assert.ok(err instanceof UserInputError, String(err));
          assert.equal(err.code, 'GRAPHRT_BUILD_PROTOCOL');
          assert.match(
            err.message,
            new RegExp(
              `build "old" \\(ref v0, commit ${'c'.repeat(40)}\\): its graphrt \\(.+\\) speaks a line protocol this worker cannot read: `,
            ),
          );
          assert.match(err.message, what);
          return true;
        });
      };
      await refused(hello({ ...current, v: 2 }), /protocol version v=2, this worker reads v=1/);
      const { driver: _driver, ...noDriver } = current;
      await refused(hello(noDriver), /field driver missing/);
      await refused(hello({ ...current, flavour: 'x' }), /fields this worker does not know: flavour/);
      await refused(
        hello({ ...current, features: { ...current.features, teleport: true } }),
        /features: fields this worker does not know: teleport/,
      );
      assert.equal(
        (await checkGraphrtBuildProtocol(hello(current), req)).version,
        current.version,
        'the same protocol passes',
      );
    });
  });
});
