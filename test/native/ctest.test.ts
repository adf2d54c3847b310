/** native/'s own tests (ctest, GPU tests excluded) run as part of `npm test`. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { skipWithoutBinary } from './graphrt.ts';

test('ctest --test-dir native/build -LE gpu passes', { skip: skipWithoutBinary }, () => {
  const r = spawnSync('ctest', ['--test-dir', 'native/build', '--output-on-failure', '-LE', 'gpu'], {
    encoding: 'utf8',
    timeout: 600_000,
  });
  if (r.error) throw r.error;
  assert.equal(r.status, 0, `ctest failed:\n${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /100% tests passed/);
});
