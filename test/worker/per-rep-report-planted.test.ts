/**
 * A per_rep program's launch-count report lies in the shared temporary directory, at a path the
 * program is told (ORCH_INJECT_REPORT), and the program runs as another user where orch is root:
 * it may put anything there. A FIFO with no writer blocked the worker's synchronous read for ever
 * (heartbeats, leases and every other gang of the host with it); a symlink was followed. Each is
 * now refused with its reason (jobs/regular-file.ts). The read runs in a child process so that,
 * without the fix, this test fails on its timeout instead of hanging the suite.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

const readPlanted = (plant: string) => `
  import { execFileSync } from 'node:child_process';
  import { symlinkSync, writeFileSync } from 'node:fs';
  import { PerRepLaunches } from './worker/command/per-rep-launches.ts';
  const counting = new PerRepLaunches({ backend: 'cuda', lib: '/opt/orch/liborch_inject.so', programEnv: {}, stepRange: null });
  const file = counting.env.ORCH_INJECT_REPORT;
  ${plant}
  console.log(JSON.stringify(counting.read(5, 0)));
`;

function run(plant: string): { status: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', readPlanted(plant)], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  return { status: r.status, out: r.stdout.trim(), err: r.stderr };
}

test('a FIFO planted at the report path is refused at once, not waited on', () => {
  const r = run("execFileSync('mkfifo', [file]);");
  assert.equal(r.status, 0, `the read did not return (killed after 10 s, or failed): ${r.err}`);
  assert.match(r.out, /"source":"none","reason":".*orch-inject-report-.*: a FIFO \(named pipe\), not a regular file"/);
});

test('a symlink planted at the report path is not followed', () => {
  const r = run("writeFileSync(file + '.target', 'x'); symlinkSync(file + '.target', file);");
  assert.equal(r.status, 0, r.err);
  assert.match(r.out, /"reason":".*: a symbolic link, not the file itself"/);
});

test("a regular report is read as before (here one that is not the library's)", () => {
  const r = run("writeFileSync(file, 'garbage\\n');");
  assert.equal(r.status, 0, r.err);
  assert.match(r.out, /line 1: not a JSON line/);
});
