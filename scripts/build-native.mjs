// Builds graphrt (native/) with CMake into native/build, leaving the binary at
// native/build/graphrt. `npm ci` runs it as postinstall with --if-possible, so a machine without
// cmake or a compiler still installs (the message says what is missing); `npm run build` fails loudly.
// GRAPHRT_CUDA=ON|OFF|AUTO (default AUTO: the CUDA backend is built where nvcc is found).
// --tests also builds graphrt's test programs for ctest (GRAPHRT_TESTS=ON): test/native/ctest.test.ts
// asks for them; an install does not, as they took most of `npm ci`'s time.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cpus } from 'node:os';

const ifPossible = process.argv.includes('--if-possible');
const tests = process.argv.includes('--tests');
const src = 'native';
const build = 'native/build';

function fail(msg) {
  if (ifPossible) {
    console.warn(`[orch] native build skipped: ${msg}\n[orch] run \`npm run build\` once it is fixed.`);
    process.exit(0);
  }
  console.error(`[orch] native build failed: ${msg}`);
  process.exit(1);
}

if (!existsSync(`${src}/CMakeLists.txt`)) fail(`${src}/CMakeLists.txt not found`);
if (spawnSync('cmake', ['--version']).status !== 0)
  fail('cmake is not installed (Debian: apt-get install -y cmake g++)');

const cuda = process.env.GRAPHRT_CUDA ?? 'AUTO';
const run = (args) => spawnSync('cmake', args, { stdio: 'inherit' }).status === 0;
if (
  !run([
    '-S',
    src,
    '-B',
    build,
    '-DCMAKE_BUILD_TYPE=Release',
    `-DGRAPHRT_CUDA=${cuda}`,
    `-DGRAPHRT_TESTS=${tests ? 'ON' : 'OFF'}`,
  ])
)
  fail('cmake configure failed (see above)');
if (!run(['--build', build, '-j', String(Math.max(1, cpus().length))])) fail('cmake build failed (see above)');
console.log(`[orch] graphrt built: ${build}/graphrt${tests ? ', with its test programs (ctest)' : ''}`);
// liborch_inject.so (native/inject/) is built where CUPTI is found (ORCH_INJECT=AUTO).
if (existsSync(`${build}/liborch_inject.so`)) console.log(`[orch] launch counter built: ${build}/liborch_inject.so`);
// liborch_nodump.so (native/nodump/): the worker loads it to make itself non-dumpable (worker/non-dumpable.ts).
if (existsSync(`${build}/liborch_nodump.so`))
  console.log(`[orch] non-dumpable library built: ${build}/liborch_nodump.so`);
