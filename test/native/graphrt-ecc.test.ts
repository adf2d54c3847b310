/**
 * ECC errors of a graphrt rank reach clock hygiene: graphrt's CUDA backend reads the card's
 * volatile uncorrected ECC count before and after each rep (native/PROTOCOL.md rep `ecc_errors`;
 * its NVML reading is checked against the planted NVML by native/tests/nvml_ecc_test.cpp, run by
 * ctest.test.ts). Here: a real cpu rep line carries no `ecc_errors` (nothing read is never a 0),
 * and the line a cuda rank prints with a count is read by this checkout's schema and marks the rep
 * throttled (jobs/clock-hygiene.ts), as an orch_rank program's does.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { throttleOf } from '../../jobs/clock-hygiene.ts';
import { parseGraphrtLine, type Rep } from '../../jobs/graphrt-protocol.ts';
import { only, runGraphrt, skipWithoutBinary } from './graphrt.ts';

test("a graphrt rep's ECC errors mark it throttled; a cpu rep reads none and says nothing", {
  skip: skipWithoutBinary,
}, () => {
  const r = runGraphrt(['run', '--backend', 'cpu', '--workload', 'chain', '--kernels', '8', '--steps', '2']);
  assert.equal(r.code, 0, r.stderr);
  const rep = only(r.lines, 'rep');
  assert.equal('ecc_errors' in rep, false, 'the cpu backend reads no ECC count: no field, never 0');
  assert.deepEqual(throttleOf([rep]), []);
  const counted = parseGraphrtLine(JSON.stringify({ ...rep, backend: 'cuda', ecc_errors: 2 })) as Rep;
  assert.equal(counted.ecc_errors, 2);
  assert.deepEqual(throttleOf([counted, rep]), ['ecc ×2']);
  assert.throws(() => parseGraphrtLine(JSON.stringify({ ...rep, ecc_errors: -1 })), /ecc_errors/);
});
