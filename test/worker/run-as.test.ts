/**
 * A user's program holds no secret (worker/run-as.ts): run as a second local user, a command
 * cannot read the worker's /proc/<pid>/environ nor its 0600 secret file, while the card's lock is
 * still held for it by the worker's flock(1). The same command as the worker's own user reads
 * both (the test's control: it can fail). A cwd the run-as user cannot enter is refused before
 * anything starts, naming the closed directory (with builds and rank caches: run-as-builds.test.ts).
 * Processes that create the same missing user at once (test files run side by side do) all get it.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { commandCwd, runCommandRep } from '../../worker/command/run-command-rep.ts';
import { resolveRunAs } from '../../worker/run-as.ts';

const root = process.getuid?.() === 0;

test("a command run as the run-as user reads neither the worker's environ nor its secret file", {
  skip: !root && 'not root: only root can switch to a second local user (useradd, setpriv)',
  timeout: 60_000,
}, async () => {
  const logged: string[] = [];
  const runAs = resolveRunAs('orch-test-run', { create: true, log: (m) => logged.push(m) });
  const d = mkdtempSync(join(tmpdir(), 'orch-runas-'));
  chmodSync(d, 0o755);
  const secretFile = join(d, 'cluster-secret');
  writeFileSync(secretFile, 'secret-planted-5d2b-0123456789abcdef\n', { mode: 0o600 });
  const cmd = [
    `if cat /proc/${process.pid}/environ >/dev/null 2>&1; then echo environ-read; else echo environ-refused; fi`,
    `if cat ${secretFile} >/dev/null 2>&1; then echo secret-read; else echo secret-refused; fi`,
    `echo "uid=$(id -u)"`,
    `echo '{"step":0,"ms":1}'; echo '{"step":1,"ms":1}'`,
  ].join('; ');
  const run = async (as: typeof runAs | null) => {
    const lines: string[] = [];
    await runCommandRep({
      workload: {
        run: { cmd, timeout_s: 30 },
        toggles: {},
        metric_source: { format: 'jsonl', field: 'ms', step_field: 'step' },
        warmup: 0,
        steps: 1,
      },
      arm: { name: 'a', toggles: {} },
      artifactDir: null,
      baseDir: d,
      cardLock: join(d, 'card.lock'),
      runAs: as,
      onLine: (_s, l) => lines.push(l),
    });
    return lines.filter((l) => !l.startsWith('{'));
  };
  assert.deepEqual(
    await run(null),
    ['environ-read', 'secret-read', 'uid=0'],
    "the control: the worker's own user reads both",
  );
  assert.deepEqual(await run(runAs), ['environ-refused', 'secret-refused', `uid=${runAs.uid}`]);
  assert.ok(runAs.uid !== 0);
});

test('a cwd under a directory the run-as user cannot enter: refused before the program starts, naming the directory', {
  skip: !root && 'not root: only root can switch to a second local user (useradd, setpriv)',
}, () => {
  const runAs = resolveRunAs('orch-test-run', { create: true, log: () => {} });
  const closed = mkdtempSync(join(tmpdir(), 'orch-runas-closed-'));
  chmodSync(closed, 0o700);
  const cwd = join(closed, 'work');
  mkdirSync(cwd);
  assert.equal(commandCwd(cwd, null, undefined, null), cwd, "the worker's own user enters it");
  assert.throws(
    () => commandCwd(cwd, null, undefined, runAs),
    (err: Error & { code?: string }) => {
      assert.equal(err.code, 'RUN_AS_UNREACHABLE');
      assert.equal(
        err.message,
        `workload.run.cwd: the program would run in ${cwd}, but orch-test-run, the user this worker runs programs as (--run-as), cannot enter ${closed} (mode 0700, owner uid 0, group gid 0)`,
      );
      return true;
    },
  );
});

test('four processes creating the same missing run-as user at once: each gets it, none fails on the others useradd', {
  skip: !root && 'not root: only root can create a user (useradd)',
  timeout: 60_000,
}, async () => {
  const user = `orch-race-${process.pid}`;
  // all four past their start-up (tsx takes a second or more) before any looks the user up
  const at = Date.now() + 4000;
  const script = `import { resolveRunAs } from ${JSON.stringify(fileURLToPath(new URL('../../worker/run-as.ts', import.meta.url)))};
await new Promise((r) => setTimeout(r, ${at} - Date.now()));
process.stdout.write(String(resolveRunAs(${JSON.stringify(user)}, { create: true, log: () => {} }).uid));`;
  try {
    const runs = await Promise.all(
      [0, 1, 2, 3].map(
        () =>
          new Promise<{ code: number | null; out: string }>((done) => {
            const c = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
              stdio: ['ignore', 'pipe', 'pipe'],
            });
            let out = '';
            c.stdout.on('data', (d: Buffer) => (out += d.toString()));
            c.stderr.on('data', (d: Buffer) => (out += d.toString()));
            c.once('exit', (code) => done({ code, out }));
          }),
      ),
    );
    const uid = resolveRunAs(user, { create: false, log: () => {} }).uid;
    assert.deepEqual(
      runs.map((r) => r.out),
      [0, 1, 2, 3].map(() => String(uid)),
    );
  } finally {
    spawnSync('userdel', [user]);
  }
});
