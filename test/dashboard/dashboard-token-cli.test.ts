// `orch dashboard` and `orch serve --http` as a user starts them, against a real redis-server:
// with no token given, the dashboard makes its own (a 0600 file in a 0700 directory of the
// user's state dir), names that file but prints no token (stdout reaches logs and terminals
// others read), and refuses every page without it (401); only with --print-token is the sign-in
// URL printed, once, and it signs a browser in; a restart reads the same token; --open-loopback serves without one and
// refuses to be combined with a token; a symlink planted as the token file is refused. Under
// `orch serve --http` the dashboard is a process of its own, behind the same token, and it ends
// when serve is killed.
import '../utils/cluster-secret.ts';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startRedisServer } from '../../store/redis-server-process.ts';
import { type OrchChild, runOrch, spawnOrch } from '../orchestrator/orch-cluster.ts';
import { freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';
import { get } from './dashboard-harness.ts';

interface Listening {
  address: string;
  token_from: string | null;
  open: string | null;
  token_file: string | null;
}

async function listening(child: OrchChild, event = 'listening'): Promise<Record<string, unknown>> {
  return waitFor(
    `orch printed its ${event} line`,
    () => {
      const line = child
        .out()
        .split('\n')
        .find((l) => l.includes(`"event":"${event}"`));
      return line ? (JSON.parse(line) as Record<string, unknown>) : null;
    },
    { timeoutMs: 60_000, intervalMs: 50 },
  );
}

async function stop(child: OrchChild): Promise<void> {
  if (child.child.exitCode === null && child.child.signalCode === null) child.child.kill('SIGTERM');
  await child.exited;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test('orch dashboard makes its own token (0600), names its file without printing it (the URL only with --print-token), and every page needs it', async () => {
  const srv = await startRedisServer();
  const state = mkdtempSync(join(tmpdir(), 'orch-dash-state-'));
  const env: Record<string, string> = {
    REDIS_URL: srv.url,
    ORCH_PREFIX: freshPrefix('dt'),
    XDG_RUNTIME_DIR: state,
    ORCH_DASHBOARD_TOKEN: '',
  };
  const children: OrchChild[] = [];
  try {
    const first = spawnOrch(['dashboard', '--port', '0', '--json'], env);
    children.push(first);
    const l = (await listening(first)) as unknown as Listening;
    assert.equal((await get(`${l.address}/`)).status, 401, 'a page without the token');
    const file = join(state, 'orch', 'dashboard-token');
    assert.equal(l.token_from, file);
    assert.equal(statSync(file).mode & 0o777, 0o600, 'the token file is readable by its owner alone');
    assert.equal(statSync(join(state, 'orch')).mode & 0o777, 0o700);
    const token = readFileSync(file, 'utf8').trim();
    assert.match(token, /^[0-9a-f]{48}$/);
    assert.equal(l.open, null, 'no sign-in URL without --print-token');
    assert.equal(l.token_file, file, 'the start-up line names the token file');
    assert.ok(!first.out().includes(token), 'the token is not printed');
    await stop(first);
    const plain = spawnOrch(['dashboard', '--port', '0'], env);
    children.push(plain);
    const said = await waitFor(
      'orch dashboard printed its start-up line',
      () =>
        plain
          .out()
          .split('\n')
          .find((x) => x.startsWith('orch dashboard listening on ')) ?? null,
      { timeoutMs: 60_000, intervalMs: 50 },
    );
    assert.ok(said.includes(`with the token in ${file} (mode 0600)`) && said.includes('--print-token'), said);
    assert.ok(!plain.out().includes(token), 'the token is not printed');
    await stop(plain);

    const printing = spawnOrch(['dashboard', '--port', '0', '--json', '--print-token'], env);
    children.push(printing);
    const lp = (await listening(printing)) as unknown as Listening;
    assert.equal(lp.open, `${lp.address}/?token=${token}`);
    assert.equal(printing.out().split(token).length - 1, 1, 'with --print-token the token is printed once');
    const signIn = await get(lp.open!);
    assert.equal(signIn.status, 303);
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    assert.equal((await get(`${lp.address}/`, { headers: { cookie } })).status, 200);
    await stop(printing);

    // a restart reads the same token: the browser's cookie still works
    const again = spawnOrch(['dashboard', '--port', '0', '--json', '--print-token'], env);
    children.push(again);
    const l2 = (await listening(again)) as unknown as Listening;
    assert.equal(l2.open, `${l2.address}/?token=${token}`);
    assert.equal((await get(`${l2.address}/`, { headers: { cookie } })).status, 200);
    await stop(again);

    const open = spawnOrch(['dashboard', '--port', '0', '--json', '--open-loopback'], env);
    children.push(open);
    const l3 = (await listening(open)) as unknown as Listening;
    assert.equal(l3.token_from, null);
    assert.equal((await get(`${l3.address}/`)).status, 200, '--open-loopback serves without a token');
    await stop(open);

    const both = await runOrch(['dashboard', '--port', '0', '--open-loopback'], {
      ...env,
      ORCH_DASHBOARD_TOKEN: 'given-token-0123456789',
    });
    assert.equal(both.code, 2, both.stderr);
    assert.match(both.stderr, /--open-loopback with a token \(ORCH_DASHBOARD_TOKEN\): an open dashboard has none/);

    const planted = mkdtempSync(join(tmpdir(), 'orch-dash-planted-'));
    mkdirSync(join(planted, 'orch'), { mode: 0o700 });
    writeFileSync(join(planted, 'elsewhere'), 'attacker-chosen-token-0123456789\n', { mode: 0o600 });
    symlinkSync(join(planted, 'elsewhere'), join(planted, 'orch', 'dashboard-token'));
    const linked = await runOrch(['dashboard', '--port', '0'], { ...env, XDG_RUNTIME_DIR: planted });
    rmSync(planted, { recursive: true, force: true });
    assert.equal(linked.code, 2, linked.stderr);
    assert.match(linked.stderr, /dashboard-token is a symbolic link/);
  } finally {
    for (const c of children) await stop(c);
    await srv.stop();
    rmSync(state, { recursive: true, force: true });
  }
});

test('orch serve --http: the dashboard is a process of its own, behind the token, and ends when serve is killed', async () => {
  const srv = await startRedisServer();
  const state = mkdtempSync(join(tmpdir(), 'orch-serve-state-'));
  const token = 'serve-http-token-0123456789abcdef';
  const serve = spawnOrch(['serve', '--json', '--http', '0'], {
    REDIS_URL: srv.url,
    ORCH_PREFIX: freshPrefix('ds'),
    XDG_RUNTIME_DIR: state,
    ORCH_DASHBOARD_TOKEN: token,
  });
  try {
    const e = (await listening(serve, 'dashboard')) as { address: string; pid: number; open: string | null };
    assert.ok(
      Number.isInteger(e.pid) && e.pid !== serve.child.pid,
      `the dashboard runs in its own process (pid ${e.pid}, serve ${serve.child.pid})`,
    );
    assert.equal(e.open, null, 'a token given is not printed');
    assert.ok(!serve.out().includes(token), 'serve prints no token it was given');
    assert.equal((await get(`${e.address}/`)).status, 401);
    assert.equal((await get(`${e.address}/`, { headers: { authorization: `Bearer ${token}` } })).status, 200);
    serve.child.kill('SIGKILL');
    await serve.exited;
    await waitFor('the dashboard process ended with serve', () => !isAlive(e.pid), {
      timeoutMs: 10_000,
      intervalMs: 50,
    });
  } finally {
    await stop(serve);
    await srv.stop();
    rmSync(state, { recursive: true, force: true });
  }
});
