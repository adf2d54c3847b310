/**
 * A user's program run as the worker's own user reads none of the worker's secrets through /proc
 * (worker/non-dumpable.ts, native/nodump/): once the worker loaded liborch_nodump.so, a child of
 * the same user can open neither its /proc/<pid>/environ nor its /proc/<pid>/mem; without it, the
 * same child reads the secret out of both (mem only where Yama's ptrace_scope is 0; the control:
 * the test can fail). Root may read any
 * process, so the worker side runs without privilege: as `nobody` where that user can read this
 * checkout, else as root with every capability dropped (the kernel then lets a same-uid process
 * read a dumpable process only, as for any user). The second test starts the real `orch worker`.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { makeNonDumpable, NODUMP_LIBRARY } from '../../worker/non-dumpable.ts';
import { waitFor } from '../utils/wait-for.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MODULE = fileURLToPath(new URL('../../worker/non-dumpable.ts', import.meta.url));
const SECRET = 'secret-planted-41d7-0123456789abcdef';
const skip = existsSync(NODUMP_LIBRARY) || process.env.CI ? false : 'native/build/liborch_nodump.so is not built';

const NOBODY = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--'];
const CAPLESS_ROOT = ['setpriv', '--inh-caps=-all', '--ambient-caps=-all', '--bounding-set=-all', '--'];

/**
 * The kernel's Yama ptrace_scope (0 where Yama is absent): at 1 or more only an ancestor may open
 * a process's /proc/<pid>/mem (an attach), dumpable or not; environ, a read, is not Yama's, so
 * there it alone tells the two apart.
 */
function yamaScope(): number {
  try {
    return Number(readFileSync('/proc/sys/kernel/yama/ptrace_scope', 'utf8').trim());
  } catch {
    return 0;
  }
}

/** The prefix that runs a command without privilege over other processes of its user. */
function unprivileged(): string[] {
  if (process.getuid?.() !== 0) return [];
  const readable = [join(ROOT, 'node_modules/tsx/package.json'), MODULE, NODUMP_LIBRARY];
  const nobodyReads =
    spawnSync(NOBODY[0]!, [
      ...NOBODY.slice(1),
      'sh',
      '-c',
      'test -r "$1" && test -r "$2" && test -r "$3"',
      'sh',
      ...readable,
    ]).status === 0;
  return nobodyReads ? NOBODY : CAPLESS_ROOT;
}

/**
 * What a program of the same user finds of process `pid`: its environ and its environment block
 * through /proc/<pid>/mem (the range /proc/<pid>/stat names, fields 50 and 51), each 'secret'
 * when the planted secret was read, 'read' when read without it, or the error's code.
 */
const PROBE = `const fs = require('node:fs');
const pid = process.argv[1], secret = process.argv[2];
const found = (b) => (b.includes(secret) ? 'secret' : 'read');
const out = {};
try { out.environ = found(fs.readFileSync('/proc/' + pid + '/environ', 'latin1')); } catch (e) { out.environ = e.code; }
try {
  const fd = fs.openSync('/proc/' + pid + '/mem', 'r');
  const stat = fs.readFileSync('/proc/' + pid + '/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).trim().split(' ');
  const start = Number(f[47]), end = Number(f[48]);
  const b = Buffer.alloc(end - start);
  fs.readSync(fd, b, 0, b.length, start);
  out.mem = found(b.toString('latin1'));
} catch (e) { out.mem = e.code; }
console.log(JSON.stringify(out));`;

/** Runs PROBE against `pid` as the unprivileged user, without the secret in its own environment. */
function probe(as: string[], pid: number): { environ: string; mem: string } {
  const argv = [...as, process.execPath, '-e', PROBE, String(pid), SECRET];
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

/** `argv` started from the checkout with `env` alone, its stdout and stderr gathered into one text. */
function spawnLogged(argv: string[], env: Record<string, string>): { child: ChildProcess; log: () => string } {
  const child = spawn(argv[0]!, argv.slice(1), { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout!.on('data', (d: Buffer) => (text += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (text += d.toString()));
  return { child, log: () => text };
}

/** A process of the unprivileged user holding SECRET in its environment; `load` calls makeNonDumpable first. */
async function holder(as: string[], load: boolean): Promise<{ child: ChildProcess; loaded: string | null }> {
  const script = `const { makeNonDumpable } = await import(${JSON.stringify(MODULE)});
console.log(JSON.stringify({ loaded: ${load} ? makeNonDumpable() : 'not loaded' }));
setInterval(() => {}, 1000);`;
  const argv = [...as, process.execPath, '--import', 'tsx', '--input-type=module', '-e', script];
  const child = spawn(argv[0]!, argv.slice(1), {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ORCH_TEST_SECRET: SECRET },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let text = '';
  child.stdout!.on('data', (d: Buffer) => (text += d.toString()));
  await waitFor('the holder started', () => text.includes('\n'), { timeoutMs: 30_000 });
  return { child, loaded: JSON.parse(text).loaded };
}

test("a program of the worker's user reads neither its environ nor its memory once the library is loaded, and both without", {
  skip,
  timeout: 60_000,
}, async () => {
  const as = unprivileged();
  console.log(
    `the worker side runs as ${as === NOBODY ? 'nobody' : as === CAPLESS_ROOT ? 'root without capabilities' : 'this user'}`,
  );
  const control = await holder(as, false);
  try {
    assert.deepEqual(
      probe(as, control.child.pid!),
      { environ: 'secret', mem: yamaScope() >= 1 ? 'EACCES' : 'secret' },
      'the control: a dumpable holder',
    );
  } finally {
    control.child.kill('SIGKILL');
  }
  const fixed = await holder(as, true);
  try {
    assert.equal(fixed.loaded, null, 'makeNonDumpable took effect');
    assert.deepEqual(probe(as, fixed.child.pid!), { environ: 'EACCES', mem: 'EACCES' });
  } finally {
    fixed.child.kill('SIGKILL');
  }
});

test('`orch worker` is non-dumpable from its start: a program of its user reads neither its environ nor its memory', {
  skip,
  timeout: 60_000,
}, async () => {
  const as = unprivileged();
  const dir = mkdtempSync(join(tmpdir(), 'orch-nodump-'));
  chmodSync(dir, 0o777);
  // a Redis that is not there: the worker gets as far as waiting for it, past its start
  const argv = [
    ...as,
    process.execPath,
    join(ROOT, 'bin/orch.mjs'),
    'worker',
    '--host',
    'nodump',
    '--cards',
    'cpu:0',
    '--redis',
    'redis://127.0.0.1:1',
    '--insecure-redis',
    '--lock-dir',
    join(dir, 'cards'),
    '--build-dir',
    join(dir, 'builds'),
  ];
  const { child: worker, log: logged } = spawnLogged(argv, {
    PATH: process.env.PATH ?? '',
    ORCH_FROM_SOURCE: '1',
    ORCH_LOG: 'debug',
    ORCH_CLUSTER_SECRET: SECRET,
  });
  try {
    // past its start: waiting for the Redis that is not there
    await waitFor(
      'the worker retrying Redis',
      () => logged().includes('redis unreachable') || worker.exitCode !== null,
      {
        timeoutMs: 45_000,
      },
    );
    const found = probe(as, worker.pid!);
    assert.deepEqual(
      found,
      { environ: 'EACCES', mem: 'EACCES' },
      `a program of the worker's user: environ ${found.environ}, mem ${found.mem}; the worker's log:\n${logged()}`,
    );
    assert.ok(logged().includes('"non-dumpable: ') && !logged().includes('stays dumpable'), logged());
  } finally {
    worker.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the embedded `orch submit` is non-dumpable before its programs start: a program of its user reads neither its environ nor its memory', {
  skip,
  timeout: 90_000,
}, async () => {
  const as = unprivileged();
  const dir = mkdtempSync(join(tmpdir(), 'orch-nodump-embedded-'));
  chmodSync(dir, 0o777);
  const started = join(dir, 'started');
  // the program says it runs (a file), then holds its rep while the test looks at orch
  const spec = join(dir, 'spec.yaml');
  writeFileSync(
    spec,
    `name: nodump-embedded
design: ab
workload:
  runtime: command
  run: { cmd: "touch ${started}; sleep 30; echo 'ms=1'", timeout_s: 60 }
  toggles: { FAST: { env: FAST, on: "1", off: "0" } }
  metric_source: { format: regex, pattern: 'ms=(?<value>[0-9.]+)', value_group: value }
  warmup: 0
  steps: 1
toggles: [FAST]
arms:
  - { name: slow, toggles: { FAST: false } }
  - { name: fast, toggles: { FAST: true } }
reps: 2
gates: { identity: false, aa: false }
metric: { name: ms, better: lower }
`,
  );
  chmodSync(spec, 0o644);
  const argv = [...as, process.execPath, join(ROOT, 'bin/orch.mjs'), 'submit', spec, '--results', join(dir, 'results')];
  const { child: submit, log: logged } = spawnLogged(argv, {
    PATH: process.env.PATH ?? '',
    HOME: dir,
    ORCH_FROM_SOURCE: '1',
    ORCH_CPU_CARDS: '1',
    ORCH_BUILD_DIR: join(dir, 'builds'),
    // a stand-in for what the process holds: the probe looks for it in environ and in memory
    ORCH_TEST_SECRET: SECRET,
  });
  try {
    await waitFor("the spec's program running", () => existsSync(started) || submit.exitCode !== null, {
      timeoutMs: 60_000,
    });
    assert.ok(existsSync(started), `the program never ran; orch submit said:\n${logged()}`);
    const found = probe(as, submit.pid!);
    assert.deepEqual(
      found,
      { environ: 'EACCES', mem: 'EACCES' },
      `a program of orch submit's user: environ ${found.environ}, mem ${found.mem}; orch submit said:\n${logged()}`,
    );
    assert.ok(!logged().includes('stays dumpable'), logged());
  } finally {
    submit.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a missing library is a reason to warn, not a failure: the worker still starts', () => {
  const missing = join(tmpdir(), 'orch-nodump-missing', 'liborch_nodump.so');
  assert.equal(makeNonDumpable(missing), `${missing} is not built`);
});
