// `orch submit` without REDIS_URL runs on the local worker's cards and no others: a command
// workload whose workload.requires none of them meets (cuda, on the cpu cards here) is refused at
// once, exit 2, naming the spec file, the requirement and the cards, instead of waiting until the
// user interrupts it.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runOrch, STACK_FRAME } from './run-orch.ts';

test('embedded submit: a spec no local card can run is refused at once, nothing written', () => {
  const root = mkdtempSync(join(tmpdir(), 'orch-requires-'));
  try {
    const r = runOrch(['submit', 'test/fixtures/specs/requires-cuda.yaml', '--results', root], {
      REDIS_URL: '',
      ORCH_PREFIX: '',
      ORCH_LOG: 'warn',
      ORCH_CPU_CARDS: '2',
    });
    console.log(r.stderr);
    assert.equal(r.status, 2, r.stderr);
    assert.match(
      r.stderr,
      /^orch: no card here can run this: test\/fixtures\/specs\/requires-cuda\.yaml: workload\.requires \[cuda\]; cards: 2 cpu@\S+$/m,
    );
    assert.match(r.stderr, /hint: .*workload\.requires/);
    assert.doesNotMatch(r.stderr, STACK_FRAME);
    assert.deepEqual(readdirSync(root), [], 'no results directory for an experiment that never registered');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
