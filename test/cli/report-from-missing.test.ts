/**
 * Messages a new user meets first: `orch report --from` a directory that is not there is the
 * user's input (exit 2, the directory named, what a results directory holds), not "internal
 * error (this is a bug in orch)" with a stack; and the embedded default does not warn that the
 * private Redis it started itself keeps nothing across a restart.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ORCH_BIN } from '../utils/worker-process.ts';

const orch = (args: string[]) =>
  spawnSync(process.execPath, [ORCH_BIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ORCH_LOG: 'warn' },
    timeout: 120_000,
  });

describe('first messages', () => {
  test('orch report --from a missing directory: exit 2 and what is wrong, no stack', () => {
    const r = orch(['report', '--from', '/nonexistent/results/x']);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /\/nonexistent\/results\/x is not an orch results directory: it does not exist/);
    assert.doesNotMatch(r.stderr, /internal error|at .*\.ts:\d+/);
  });

  test('the embedded default does not warn about persistence of its own private Redis', () => {
    const dir = mkdtempSync(join(tmpdir(), 'orch-first-'));
    const spec = join(dir, 'a.yaml');
    writeFileSync(
      spec,
      'name: first\ndesign: ab\nworkload: { runtime: native, kind: chain, params: { kernels: 4 }, warmup: 1, steps: 2 }\ntoggles: [graph]\narms: [{ name: eager }, { name: graph, toggles: { graph: true } }]\nreps: 2\n',
    );
    const r = orch(['submit', spec, '--results', join(dir, 'results')]);
    assert.ok([0, 3, 4].includes(r.status ?? -1), r.stdout + r.stderr);
    assert.doesNotMatch(r.stdout + r.stderr, /appendonly yes/);
  });
});
