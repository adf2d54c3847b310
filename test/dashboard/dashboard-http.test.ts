// The dashboard over HTTP against real redis-servers: an unknown experiment is a 404 page that
// says so; results files outside an experiment's directory are refused; cancel needs the token
// on loopback too and a wrong one is a 401 whose log line holds no token; a dashboard without a
// token refuses to start (beyond loopback always, on loopback unless --open-loopback); Redis going away shows on every page and the pages
// come back when it returns.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import { startDashboard } from '../../orchestrator/dashboard/server.ts';
import { startRedisServer } from '../../store/redis-server-process.ts';
import { freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';
import { get, testDashboard } from './dashboard-harness.ts';

const PAGES = ['/', '/queue', '/experiments', '/nightly'];

test('dashboard: 404 for an unknown experiment, traversal refused, cancel needs the token, 401 logs nothing secret', async () => {
  const srv = await startRedisServer();
  const root = mkdtempSync(join(tmpdir(), 'orch-dash-'));
  const token = 'tok-0123456789abcdef-secret';
  const d = await testDashboard({ url: srv.url, prefix: freshPrefix('d'), token, resultsRoot: join(root, 'results') });
  try {
    mkdirSync(join(root, 'results', 'exp1'), { recursive: true });
    writeFileSync(join(root, 'results', 'exp1', 'report.md'), '# report\n');
    writeFileSync(join(root, 'outside.txt'), 'not served\n');
    symlinkSync(join(root, 'outside.txt'), join(root, 'results', 'exp1', 'link.txt'));

    const missing = await d.get('/experiments/no-such-exp');
    assert.equal(missing.status, 404);
    assert.match(missing.type, /text\/html/);
    assert.match(missing.text, /No experiment &quot;no-such-exp&quot; in this Redis/);

    assert.equal((await d.get('/results/exp1/report.md')).text, '# report\n');
    for (const bad of [
      '/results/exp1/..%2f..%2foutside.txt',
      '/results/exp1/../../outside.txt',
      '/results/..%2foutside.txt/x',
      '/results/exp1/link.txt',
      '/results/exp1/%2e%2e/%2e%2e/outside.txt',
    ]) {
      const r = await d.get(bad);
      assert.equal(r.status, 404, `${bad}: ${r.status} ${r.text}`);
      assert.doesNotMatch(r.text, /not served/);
    }
    assert.equal((await d.get('/results/exp1/report.md', { method: 'DELETE' })).status, 404);

    const none = await get(`${d.address}/experiments/exp1/cancel`, { method: 'POST' });
    assert.equal(none.status, 401);
    const wrong = await get(`${d.address}/experiments/exp1/cancel`, {
      method: 'POST',
      headers: { authorization: 'Bearer wrong-token-value-xyz' },
    });
    assert.equal(wrong.status, 401);
    assert.match(wrong.text, /Wrong token/);
    const formWrong = await get(`${d.address}/experiments/exp1/cancel`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'token=form-wrong-token-abc',
    });
    assert.equal(formWrong.status, 401);
    const right = await get(`${d.address}/experiments/exp1/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
    });
    assert.equal(right.status, 404, 'the right token reaches cancel, which finds no such experiment');
    const log = d.logText();
    assert.match(log, /wrong dashboard token: refused with 401/);
    for (const secret of ['wrong-token-value-xyz', 'form-wrong-token-abc', token])
      assert.ok(!log.includes(secret), `the log holds ${secret}:\n${log}`);
  } finally {
    await d.close();
    await srv.stop();
    rmSync(root, { recursive: true, force: true });
  }

  // loopback with --open-loopback: reads open, cancel refused as untokened
  const srv2 = await startRedisServer();
  const open = await testDashboard({ url: srv2.url, prefix: freshPrefix('d'), token: null });
  try {
    assert.equal((await get(`${open.address}/`)).status, 200);
    const r = await get(`${open.address}/experiments/x/cancel`, { method: 'POST' });
    assert.equal(r.status, 403);
    assert.match(r.text, /no token \(--open-loopback\), so it takes no write action/);
  } finally {
    await open.close();
    await srv2.stop();
  }
  await assert.rejects(
    startDashboard({
      url: 'redis://127.0.0.1:1',
      prefix: 'x',
      host: '0.0.0.0',
      port: 0,
      token: null,
      resultsRoot: 'results',
      log: pino({ level: 'silent' }),
    }),
    /an address other than loopback needs a token/,
  );
  await assert.rejects(
    startDashboard({
      url: 'redis://127.0.0.1:1',
      prefix: 'x',
      host: '127.0.0.1',
      port: 0,
      token: null,
      resultsRoot: 'results',
      log: pino({ level: 'silent' }),
    }),
    /no token, and --open-loopback was not given/,
  );
});

test('dashboard: Redis unreachable shows on every page, and the pages recover when it returns', async () => {
  let srv = await startRedisServer();
  const { port, password } = srv;
  const d = await testDashboard({ url: srv.url, prefix: freshPrefix('d') });
  try {
    for (const p of PAGES) assert.equal((await d.get(p)).status, 200, p);
    await srv.stop();
    await waitFor(
      'the dashboard notices Redis is gone',
      async () => (await get(`${d.address}/healthz`)).text.includes('down'),
      { timeoutMs: 15_000, intervalMs: 100 },
    );
    for (const p of [...PAGES, '/experiments/any']) {
      const r = await d.get(p);
      assert.equal(r.status, 503, p);
      assert.match(r.text, /Redis unreachable/, p);
      assert.match(r.text, /data-redis="down"/, p);
    }
    const metrics = await d.get('/metrics');
    assert.match(metrics.text, /^orch_redis_up 0$/m);

    srv = await startRedisServer({ port, password });
    await waitFor('pages answer again', async () => (await d.get('/')).status === 200, {
      timeoutMs: 20_000,
      intervalMs: 200,
    });
    for (const p of PAGES) {
      const r = await d.get(p);
      assert.equal(r.status, 200, p);
      assert.doesNotMatch(r.text, /Redis unreachable/);
    }
  } finally {
    await d.close();
    await srv.stop();
  }
});
