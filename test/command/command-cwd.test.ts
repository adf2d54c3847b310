/**
 * A relative workload.run.cwd is resolved on the worker (against the build's artifact dir), so
 * only the worker can find it missing: through `orch submit` (the embedded default: a private
 * redis-server, the scheduler and a real worker) the run fails with COMMAND_CWD_MISSING, whose
 * message names the directory it looked for and how that was resolved, before any measurement.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { gitCheckout } from '../build/build-helpers.ts';
import { runOrch } from '../cli/run-orch.ts';
import { speedySpec } from './speedy-spec.ts';

test('a relative run.cwd missing on the worker: COMMAND_CWD_MISSING naming the directory and its resolution', () => {
  const src = gitCheckout('cmd-speedy');
  const buildDir = mkdtempSync(join(tmpdir(), 'orch-builds-'));
  const dir = mkdtempSync(join(tmpdir(), 'orch-cmd-cwd-'));
  const file = join(dir, 'speedy.yaml');
  writeFileSync(file, speedySpec({ dir: src, reps: 2, steps: 3, runCwd: 'no/such/dir' }));
  const results = join(dir, 'results');
  const r = runOrch(['submit', file, '--results', results], {
    ORCH_BUILD_DIR: buildDir,
    ORCH_LOG: 'warn',
    REDIS_URL: '',
  });
  const output = r.stdout + r.stderr;
  const [id] = readdirSync(results);
  assert.ok(id !== undefined, output);
  const summary = JSON.parse(readFileSync(join(results, id, 'summary.json'), 'utf8'));
  // The directory looked for: the relative cwd under the artifact dir of the build this run made.
  const events = readFileSync(join(results, id, 'events.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { event: { event?: string; key?: string } });
  const key = events.find((e) => e.event.event === 'build-end')?.event.key;
  assert.ok(key !== undefined, 'the run built before it looked for the directory');
  const artifacts = join(buildDir, 'artifacts', key);
  assert.ok(existsSync(artifacts) && !existsSync(join(artifacts, 'no/such/dir')));
  const message = `COMMAND_CWD_MISSING: workload.run.cwd: the directory ${join(artifacts, 'no/such/dir')} does not exist on this worker (workload.run.cwd "no/such/dir" is relative, resolved against the build's artifact dir)`;
  assert.equal(summary.state, 'failed');
  assert.ok(String(summary.reason).endsWith(message), summary.reason);
  assert.ok(r.stderr.includes(`experiment ${id} ended failed: block 0: `) && r.stderr.includes(message), r.stderr);
  assert.equal(
    r.status,
    2,
    "the experiment ended failed on the user's input (outcome-exit-code.ts: 2, as any input error)",
  );
  assert.equal(summary.accounting.measured, 0);
  // a user's mistake fails the same way again: one attempt, no retry
  assert.equal(events.filter((e) => e.event.event === 'block-start').length, 1);
});
