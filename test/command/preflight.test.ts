/**
 * Preflight (worker/preflight/preflight.ts): a damaged cache entry, a disk below the spec's
 * floor, and a CPU-only graphrt for a spec that needs cuda are refused before any card time.
 * The backend check runs the real graphrt: the repo's build, and a CPU-only one (GRAPHRT_CUDA=OFF)
 * when ORCH_TEST_GRAPHRT_CPU names it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { UserInputError } from '../../jobs/errors.ts';
import { BuildCache } from '../../worker/builds/build-cache.ts';
import {
  checkArtifacts,
  checkBackend,
  checkFreeDisk,
  freeBytes,
  preflightGraphrt,
} from '../../worker/preflight/preflight.ts';
import { FIXTURES } from '../build/build-helpers.ts';
import { skipWithoutBinary } from '../native/graphrt.ts';
import { ORCH_BIN } from '../utils/worker-process.ts';

const GRAPHRT = fileURLToPath(new URL('../../native/build/graphrt', import.meta.url));
const GRAPHRT_CPU = process.env.ORCH_TEST_GRAPHRT_CPU;
const CUDA_SPEC = `name: needs-cuda
design: ab
workload: { runtime: native, backend: cuda, kind: chain, params: { kernels: 4 }, warmup: 1, steps: 2 }
toggles: [graph]
arms: [{ name: eager, toggles: { graph: false } }, { name: graph, toggles: { graph: true } }]
reps: 2
metric: { name: ms, better: lower }
`;

describe('preflight', () => {
  test('an artifact missing from the cache entry is refused, naming workload.build.artifacts[i]', async () => {
    const cache = new BuildCache({ root: mkdtempSync(join(tmpdir(), 'orch-pre-')), host: 'h1' });
    process.env.BUILD_TRACE = join(cache.root, 'trace');
    process.env.BUILD_SLEEP = '0';
    // the build gets only the variables the operator names (worker/command/program-env.ts)
    process.env.ORCH_RANK_ENV = 'BUILD_*';
    const b = await cache.ensure({
      build: {
        cmd: 'sh build.sh',
        artifacts: ['out/tool'],
        key: { git: false, dirty_diff: false, flags: [], toolchain: [] },
        dir: join(FIXTURES, 'cmd-slow-build'),
      },
    });
    checkArtifacts(b);
    rmSync(b.artifacts[0]!);
    assert.throws(
      () => checkArtifacts(b),
      (e: unknown) =>
        e instanceof UserInputError &&
        e.code === 'PREFLIGHT_ARTIFACT_MISSING' &&
        e.message.startsWith(`workload.build.artifacts[0]: ${b.artifacts[0]} is missing`),
    );
  });

  test("free disk below the spec's floor is refused, naming min_free_disk_gb", async () => {
    const free = await freeBytes(tmpdir());
    // Other processes write meanwhile: the second reading is near the first, not equal to it.
    assert.ok(Math.abs((await checkFreeDisk(tmpdir(), 0)) - free) < 1e9);
    const floor = Math.ceil(free / 1e9) + 1000;
    await assert.rejects(
      checkFreeDisk(tmpdir(), floor),
      (e: unknown) =>
        e instanceof UserInputError &&
        e.code === 'PREFLIGHT_DISK' &&
        e.message.startsWith(`min_free_disk_gb: ${tmpdir()} has `) &&
        e.message.endsWith(`the spec asks for at least ${floor} GB`),
    );
  });

  test('a spec that needs cuda refuses a CPU build, naming GRAPHRT_CUDA=ON in the message', () => {
    assert.throws(
      () => checkBackend({ backend: 'cpu', features: { graph: true, pdl: false } }, 'cuda', 'graphrt'),
      (e: unknown) =>
        e instanceof UserInputError &&
        e.code === 'PREFLIGHT_CPU_BUILD' &&
        e.message ===
          'workload.backend: the spec needs cuda, but graphrt is a CPU-only build (it reports backend "cpu" (features: graph=true pdl=false)): rebuild it with GRAPHRT_CUDA=ON. A CPU build prints launches=0, which would read as a broken instrument, so nothing is measured.',
    );
    // A CUDA build on a host without a visible GPU is the host's problem, not the build flag's.
    assert.throws(
      () => checkBackend({ backend: 'cpu' }, 'cuda', 'graphrt', 'no CUDA device is visible'),
      (e: unknown) => e instanceof UserInputError && e.code === 'PREFLIGHT_NO_GPU',
    );
    assert.doesNotThrow(() => checkBackend({ backend: 'cpu' }, 'auto', 'graphrt'));
    assert.doesNotThrow(() => checkBackend({ backend: 'cuda' }, 'cuda', 'graphrt'));
    // A GPU host's graphrt says cuda under auto; a cpu spec runs it with --backend cpu.
    assert.doesNotThrow(() => checkBackend({ backend: 'cuda' }, 'cpu', 'graphrt'));
  });

  // The real graphrt: the repo's build (CUDA where nvcc was found at build time), and a CPU-only
  // build when ORCH_TEST_GRAPHRT_CPU names one (cmake -DGRAPHRT_CUDA=OFF).
  for (const [name, binary] of [
    ['native/build/graphrt', GRAPHRT],
    ['ORCH_TEST_GRAPHRT_CPU', GRAPHRT_CPU ?? ''],
  ] as const) {
    test(`graphrt hello preflight (${name}): auto passes; cuda on this GPU-less host is refused with graphrt's own reason`, {
      skip: binary === GRAPHRT ? skipWithoutBinary : !existsSync(binary) && `no graphrt at ${binary || name}`,
    }, async () => {
      const hello = await preflightGraphrt(binary, 'auto');
      assert.equal(hello.backend, 'cpu');
      const built = spawnSync(binary, ['hello', '--backend', 'cuda'], { encoding: 'utf8' }).stdout;
      const cpuOnly = built.includes('not built into this graphrt');
      await assert.rejects(preflightGraphrt(binary, 'cuda'), (e: unknown) => {
        assert.ok(e instanceof UserInputError);
        assert.equal(e.code, cpuOnly ? 'PREFLIGHT_CPU_BUILD' : 'PREFLIGHT_NO_GPU');
        if (cpuOnly)
          assert.match(
            e.message,
            /is a CPU-only build \(it reports backend "cpu" \(features: [^)]*\); backend "cuda" is not built into this graphrt.*\): rebuild it with GRAPHRT_CUDA=ON\./,
          );
        console.log(`${name} (${cpuOnly ? 'CPU-only build' : 'CUDA build, no GPU'}): ${e.message}`);
        return true;
      });
      // orch submit refuses the cuda spec before anything starts: exit 2, no results.
      const dir = mkdtempSync(join(tmpdir(), 'orch-pre-'));
      writeFileSync(join(dir, 'cuda.yaml'), CUDA_SPEC);
      const r = spawnSync(
        process.execPath,
        [ORCH_BIN, 'submit', join(dir, 'cuda.yaml'), '--results', join(dir, 'results')],
        { encoding: 'utf8', env: { ...process.env, ORCH_GRAPHRT: binary } },
      );
      assert.equal(r.status, 2, r.stderr);
      assert.match(
        r.stderr,
        cpuOnly
          ? /workload\.backend: the spec needs cuda, but \S+ is a CPU-only build .*rebuild it with GRAPHRT_CUDA=ON/
          : /workload\.backend: the spec needs cuda; \S+ has the CUDA backend but reports backend "cpu"/,
      );
      assert.equal(existsSync(join(dir, 'results')), false);
    });
  }
});
