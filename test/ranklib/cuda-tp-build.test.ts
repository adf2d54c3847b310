/**
 * examples/cuda-tp's CUDA build (tp.cu) where nvcc is found; it runs on GPUs, not here. Checked:
 * build-cuda.sh builds it and says on its last stderr line which build it made (with NCCL where
 * `--nccl-root` finds nccl.h, else a gang of one only); the binary so built without NCCL refuses
 * a gang of 2 at setup, before any CUDA call, naming the fix; and tp.cu's NCCL path
 * (-DORCH_RANK_NCCL: nccl_allreduce.hpp's communicator and all-reduce, orch_rank.h's
 * nccl_unique_id()) compiles against NCCL's declarations (test/fixtures/nccl-declarations), as
 * nvcc would against a real nccl.h, warnings as errors. Linking and running it need NCCL and GPUs.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCRIPT = join(ROOT, 'examples', 'cuda-tp', 'build-cuda.sh');
const TP = join(ROOT, 'examples', 'cuda-tp', 'tp.cu');

/** nvcc at CUDA's usual place, else on PATH; null when there is none. */
function findNvcc(): string | null {
  const path = (process.env.PATH ?? '').split(delimiter).filter((d) => d !== '');
  return ['/usr/local/cuda/bin/nvcc', ...path.map((d) => join(d, 'nvcc'))].find((p) => existsSync(p)) ?? null;
}

const nvcc = findNvcc();
const skip = nvcc === null ? 'no nvcc at /usr/local/cuda/bin or on PATH' : false;
/** PATH with nvcc's directory first: build-cuda.sh takes nvcc from PATH. */
const env = { ...process.env, PATH: `${dirname(nvcc ?? '/')}${delimiter}${process.env.PATH ?? ''}` };
const dir = mkdtempSync(join(tmpdir(), 'orch-cuda-tp-'));
const bin = join(dir, 'cuda-tp');

after(() => rmSync(dir, { recursive: true, force: true }));

describe('examples/cuda-tp/tp.cu with nvcc', { skip }, () => {
  test('build-cuda.sh builds it and says whether NCCL is in', { timeout: 600_000 }, () => {
    const root = spawnSync(SCRIPT, ['--nccl-root'], { cwd: ROOT, env, encoding: 'utf8' });
    assert.equal(root.status, 0, root.stderr);
    const cc = spawnSync(SCRIPT, [bin], { cwd: ROOT, env, encoding: 'utf8' });
    assert.equal(cc.status, 0, `build-cuda.sh failed: ${cc.error?.message ?? ''}${cc.stderr}`);
    assert.ok(existsSync(bin), `no ${bin}`);
    const said = cc.stderr.trim().split('\n').at(-1) ?? '';
    if (root.stdout.trim() === 'none') assert.match(said, /^cuda-tp: built .* without NCCL .*: a gang of one only$/);
    else assert.match(said, /^cuda-tp: built .* with NCCL \(.*\): any WORLD_SIZE$/);
  });

  test('built without NCCL, a gang of 2 is refused at setup with the fix', (t) => {
    const root = spawnSync(SCRIPT, ['--nccl-root'], { cwd: ROOT, env, encoding: 'utf8' });
    if (root.stdout.trim() !== 'none') return t.skip(`this build has NCCL (${root.stdout.trim()})`);
    const r = spawnSync(bin, [], {
      env: { PATH: env.PATH, ORCH_RANK_PROTOCOL: '1', ORCH_PARAMS: '{}', RANK: '0', WORLD_SIZE: '2', ORCH_RANK: '0' },
      input: '',
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.notEqual(r.status, 0, r.stderr);
    assert.match(r.stderr, /a gang of 2 ranks needs NCCL, and this binary was built without it/);
    assert.match(r.stderr, /install NCCL's headers and library .* and rebuild, or run blocks\.ranks: 1/);
  });

  test("its NCCL path compiles against NCCL's declarations, warnings as errors", { timeout: 600_000 }, () => {
    const cc = spawnSync(
      nvcc as string,
      [
        '-O2',
        '-std=c++17',
        '-arch=sm_90',
        '-Werror',
        'all-warnings',
        '-DORCH_RANK_NCCL',
        '-I',
        join(ROOT, 'test', 'fixtures', 'nccl-declarations'),
        '-I',
        join(ROOT, 'ranklib', 'cpp'),
        '-c',
        TP,
        '-o',
        join(dir, 'tp-nccl.o'),
      ],
      { encoding: 'utf8' },
    );
    assert.equal(cc.status, 0, `nvcc -DORCH_RANK_NCCL failed: ${cc.error?.message ?? ''}${cc.stderr}`);
  });
});
