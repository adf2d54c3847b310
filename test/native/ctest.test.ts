/**
 * native/'s own tests (ctest, GPU tests excluded) run as part of `npm test`. Their programs are
 * built here (scripts/build-native.mjs --tests, GRAPHRT_TESTS=ON), not by the install: an install
 * builds graphrt alone.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { skipWithoutBinary } from './graphrt.ts';

test('ctest --test-dir native/build -LE gpu passes', { skip: skipWithoutBinary }, () => {
  const built = spawnSync(process.execPath, ['scripts/build-native.mjs', '--tests'], {
    encoding: 'utf8',
    timeout: 600_000,
  });
  if (built.error) throw built.error;
  assert.equal(built.status, 0, `building graphrt's test programs failed:\n${built.stdout}\n${built.stderr}`);
  const r = spawnSync('ctest', ['--test-dir', 'native/build', '--output-on-failure', '-LE', 'gpu'], {
    encoding: 'utf8',
    timeout: 600_000,
  });
  if (r.error) throw r.error;
  assert.equal(r.status, 0, `ctest failed:\n${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /100% tests passed/);
});
