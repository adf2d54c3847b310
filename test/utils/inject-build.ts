/**
 * liborch_inject.so (native/inject/) built by a test into a directory of its own with the real
 * CMake target (ORCH_INJECT=ON, GRAPHRT_CUDA=OFF: a host compiler and CUPTI's headers), and the
 * one way these tests run a tool: it must exit 0, else the test fails with its output.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const NATIVE = fileURLToPath(new URL('../../native/', import.meta.url));
export const CUDA = process.env.CUDA_HOME ?? '/usr/local/cuda';
/** Why the library cannot be built here, or false when it can. */
export const NO_CUPTI = ['include/cupti.h', 'extras/CUPTI/include/cupti.h'].some((p) => existsSync(join(CUDA, p)))
  ? false
  : `no cupti.h under ${CUDA}: the library is not built here`;

export function sh(cmd: string, args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv } = {}): string {
  const r = spawnSync(cmd, args, {
    encoding: 'utf8',
    input: opts.input,
    env: opts.env ?? process.env,
    timeout: 300_000,
  });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} failed: ${r.error?.message ?? ''}${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** The CUDA runtime's library directory, or null where the toolkit has none. */
export const CUDART_DIR =
  ['lib64', 'lib'].map((d) => join(CUDA, d)).find((d) => existsSync(join(d, 'libcudart.so'))) ?? null;

/** test/fixtures/ranks/idle-rank.cpp built with CUDA on (no warnings) into `dir`; the binary's path. Needs CUDART_DIR. */
export function buildIdleRank(dir: string): string {
  return buildCudaFixtureRank(dir, 'idle-rank');
}

/** test/fixtures/ranks/<name>.cpp built against orch_rank.h with CUDA on (no warnings) into `dir`; the binary's path. Needs CUDART_DIR. */
export function buildCudaFixtureRank(dir: string, name: string): string {
  const bin = join(dir, name);
  const src = fileURLToPath(new URL(`../fixtures/ranks/${name}.cpp`, import.meta.url));
  const ranklib = fileURLToPath(new URL('../../ranklib/cpp/', import.meta.url));
  sh('g++', [
    '-O2',
    '-std=c++17',
    '-Wall',
    '-Wextra',
    '-Wshadow',
    '-Wpedantic',
    '-Werror',
    '-DORCH_RANK_CUDA',
    '-I',
    ranklib,
    '-I',
    join(CUDA, 'include'),
    src,
    '-o',
    bin,
    '-L',
    CUDART_DIR as string,
    '-lcudart',
    `-Wl,-rpath,${CUDART_DIR as string}`,
    '-ldl',
  ]);
  return bin;
}

/** Configures and builds the orch_inject target under `dir`/build; the library's path. */
export function buildInjectLibrary(dir: string): string {
  sh('cmake', [
    '-S',
    NATIVE,
    '-B',
    join(dir, 'build'),
    '-DCMAKE_BUILD_TYPE=Release',
    '-DGRAPHRT_CUDA=OFF',
    '-DORCH_INJECT=ON',
  ]);
  sh('cmake', ['--build', join(dir, 'build'), '--target', 'orch_inject']);
  return join(dir, 'build', 'liborch_inject.so');
}
