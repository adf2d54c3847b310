// No page of another origin may frame the dashboard (a framed cancel button can be clickjacked):
// every response — pages, refusals (401, 403, 421), 404s, /metrics, /healthz, bull-board, the
// live feed and a results file with its own CSP — carries `Content-Security-Policy:
// frame-ancestors 'none'` and `X-Frame-Options: DENY` (orchestrator/dashboard/request-guard.ts).
// Real HTTP against a dashboard on a real redis-server.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { freshPrefix, privateRedis } from '../utils/redis.ts';
import { get, testDashboard } from './dashboard-harness.ts';

const r = privateRedis();

/** The status and headers of a GET with a Host of the test's choosing (fetch sets its own). */
function headersWithHost(
  address: string,
  path: string,
  host: string,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined> }> {
  const u = new URL(address);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, headers: { host } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The status and headers of a streamed answer (the live feed), read and then dropped. */
async function streamHeaders(url: string, token: string): Promise<{ status: number; headers: Headers }> {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: abort.signal });
  abort.abort();
  return { status: res.status, headers: res.headers };
}

function assertNoFraming(what: string, csp: string | null | undefined, xfo: string | null | undefined): void {
  assert.ok(
    csp
      ?.split(';')
      .map((d) => d.trim())
      .includes("frame-ancestors 'none'"),
    `${what}: Content-Security-Policy ${JSON.stringify(csp)}`,
  );
  assert.equal(xfo, 'DENY', `${what}: X-Frame-Options`);
}

test("every response forbids framing: frame-ancestors 'none' and X-Frame-Options DENY, refusals and 404s included", async () => {
  const root = mkdtempSync(join(tmpdir(), 'orch-dash-framing-'));
  mkdirSync(join(root, 'results', 'exp-1'), { recursive: true });
  writeFileSync(join(root, 'results', 'exp-1', 'report.md'), '# report\n');
  const d = await testDashboard({ url: r.server.url, prefix: freshPrefix('f'), resultsRoot: join(root, 'results') });
  try {
    const seen: [string, number, number][] = [];
    const check = async (what: string, status: number, answer: Promise<{ status: number; headers: Headers }>) => {
      const a = await answer;
      seen.push([what, status, a.status]);
      assertNoFraming(
        `${what} (${a.status})`,
        a.headers.get('content-security-policy'),
        a.headers.get('x-frame-options'),
      );
    };
    await check('the cluster page', 200, d.get('/'));
    await check('a page without the token', 401, get(`${d.address}/`));
    await check('the sign-in form', 200, get(`${d.address}/login`));
    await check('/healthz', 200, get(`${d.address}/healthz`));
    await check('/metrics', 200, d.get('/metrics'));
    await check('bull-board', 200, d.get('/bull'));
    await check('a route that does not exist', 404, d.get('/no-such-page'));
    await check(
      'a cancel from another origin',
      403,
      d.get('/experiments/exp-1/cancel', { method: 'POST', headers: { origin: 'http://127.0.0.1:1' } }),
    );
    await check('the live feed', 200, streamHeaders(`${d.address}/live?view=cluster`, d.token!));
    const file = await d.get('/results/exp-1/report.md');
    await check('a results file', 200, Promise.resolve(file));
    assert.match(
      file.headers.get('content-security-policy')!,
      /^default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'$/,
      "a route's own policy keeps its rules",
    );
    const rebound = await headersWithHost(d.address, '/', 'rebound.example');
    seen.push(['another Host', 421, rebound.status]);
    assertNoFraming(
      'another Host (421)',
      rebound.headers['content-security-policy'] as string,
      rebound.headers['x-frame-options'] as string,
    );
    assert.deepEqual(
      seen.map(([w, , got]) => [w, got]),
      seen.map(([w, want]) => [w, want]),
      'each answer is the one meant',
    );
  } finally {
    await d.close();
    rmSync(root, { recursive: true, force: true });
  }
});
