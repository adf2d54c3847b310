// The dashboard's guard against the audit's attacks, over real HTTP against a real redis-server:
// a cancel posted from another loopback origin with the session cookie is refused (403) and
// cancels nothing, as are one marked cross-site and one without the page's CSRF field, while the
// page's own form cancels; a request for another Host name (DNS rebinding) is refused (421);
// every page needs the token (401), `?token=` signs a browser in and leaves the URL; a results
// directory or file that is a link out of the results root is not served (results/<id> -> /etc
// served /etc/passwd); run.env values, grant MACs and webhooks are masked in bull-board and in
// the served spec.yaml.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Queue } from 'bullmq';
import { submitExperiment } from '../../orchestrator/experiment/submit.ts';
import { loadSpec } from '../../orchestrator/spec/load-spec.ts';
import { CardRegistry } from '../../store/card-registry.ts';
import { hostQueue } from '../../store/keys.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';
import { get, type TestDashboard, testDashboard } from './dashboard-harness.ts';

const r = privateRedis();
const FORM = 'application/x-www-form-urlencoded';

async function withDashboard(
  run: (d: TestDashboard, prefix: string, root: string) => Promise<void>,
  before?: (prefix: string) => Promise<void>,
): Promise<void> {
  const prefix = freshPrefix('g');
  const root = mkdtempSync(join(tmpdir(), 'orch-dash-guard-'));
  await before?.(prefix);
  const d = await testDashboard({ url: r.server.url, prefix, resultsRoot: join(root, 'results') });
  try {
    await run(d, prefix, root);
  } finally {
    await d.close();
    rmSync(root, { recursive: true, force: true });
  }
}

/** The session cookie (`name=value`) a browser gets from the /login form. */
async function signIn(d: TestDashboard): Promise<string> {
  const res = await fetch(`${d.address}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': FORM, origin: d.address },
    body: `token=${d.token}`,
  });
  const cookie = res.headers.get('set-cookie')?.split(';')[0];
  assert.ok(cookie, `/login set no cookie (${res.status})`);
  return cookie;
}

/** A GET with a Host header of the test's choosing (fetch sets its own). */
function getWithHost(
  address: string,
  path: string,
  host: string,
  token: string | null,
): Promise<{ status: number; text: string }> {
  const u = new URL(address);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path,
        headers: { host, ...(token ? { authorization: `Bearer ${token}` } : {}) },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

test("cancel from another origin with the session cookie is refused (403) and cancels nothing; the page's own form cancels", async () => {
  let id = '';
  await withDashboard(
    async (d, prefix) => {
      const cookie = await signIn(d);
      const cancel = (headers: Record<string, string>, body = 'csrf=guessed') =>
        get(`${d.address}/experiments/${id}/cancel`, {
          method: 'POST',
          headers: { 'content-type': FORM, ...headers },
          body,
        });
      const state = () => r.redis.hget(`${prefix}:experiment:${id}`, 'state');

      const cross = await cancel({ cookie, origin: 'http://127.0.0.1:1' });
      assert.equal(cross.status, 403, `a POST from http://127.0.0.1:1 with the cookie: ${cross.status} ${cross.text}`);
      assert.match(cross.text, /from another origin \(Origin http:\/\/127\.0\.0\.1:1;/);
      assert.equal(await state(), 'queued', 'the cross-origin cancel cancelled the experiment');
      assert.equal(
        (await cancel({ cookie, 'sec-fetch-site': 'same-site' })).status,
        403,
        'Sec-Fetch-Site same-site (another port) is refused',
      );
      assert.equal(
        (await cancel({ authorization: `Bearer ${d.token}`, origin: 'http://attacker.example' })).status,
        403,
        'a foreign Origin is refused even with the token',
      );
      const noCsrf = await cancel({ cookie, origin: d.address }, '');
      assert.equal(noCsrf.status, 403, 'the cookie alone does not act');
      assert.match(noCsrf.text, /without the page's CSRF field/);
      assert.equal(await state(), 'queued');

      // the queue page's form: same origin, the cookie and its CSRF field
      const page = await get(`${d.address}/queue`, { headers: { cookie } });
      const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(page.text)?.[1];
      assert.ok(csrf, "the queue page's cancel form carries a CSRF field");
      assert.ok(!page.text.includes(d.token!), 'the page does not hold the token');
      const own = await cancel({ cookie, origin: d.address }, `csrf=${csrf}`);
      assert.equal(own.status, 303, own.text);
      assert.equal(own.headers.get('location'), `/experiments/${id}`);
      assert.equal(await state(), 'cancelling');
      const log = d.logText();
      assert.match(log, /dashboard request refused with 403/);
      for (const secret of [d.token!, cookie.split('=')[1]!, csrf])
        assert.ok(!log.includes(secret), 'the log holds a credential');
    },
    async (prefix) => {
      id = (await submitExperiment({ redis: r.redis, prefix, loaded: loadSpec('test/fixtures/specs/tiny-ab.yaml') }))
        .id;
    },
  );
});

test('a request for another Host name is refused (421), on every route', async () => {
  await withDashboard(async (d) => {
    const port = new URL(d.address).port;
    for (const path of ['/', '/healthz', '/live?view=cluster', '/results/x/y', '/metrics']) {
      for (const host of ['attacker.example', `attacker.example:${port}`, '127.0.0.1:1']) {
        const res = await getWithHost(d.address, path, host, d.token);
        assert.equal(res.status, 421, `${path} with Host ${host}: ${res.status} ${res.text.slice(0, 200)}`);
      }
    }
    const refused = await getWithHost(d.address, '/', 'attacker.example', d.token);
    assert.match(
      refused.text,
      /does not answer to the host name "attacker\.example": it answers to 127\.0\.0\.1:\d+, localhost:\d+/,
    );
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`])
      assert.equal((await getWithHost(d.address, '/', host, d.token)).status, 200, host);
  });
});

test('every page needs the token (401); ?token= signs a browser in by cookie and leaves the URL', async () => {
  await withDashboard(async (d) => {
    for (const path of [
      '/',
      '/queue',
      '/experiments',
      '/nightly',
      '/metrics',
      '/bull',
      '/live?view=cluster',
      '/results/x/y',
    ]) {
      const res = await get(`${d.address}${path}`);
      assert.equal(res.status, 401, `${path} without the token: ${res.status}`);
      assert.match(res.text, /This needs the dashboard token/);
    }
    assert.equal((await get(`${d.address}/healthz`)).status, 200, 'liveness needs no token');
    assert.equal((await get(`${d.address}/?token=wrong-token-0123456789`)).status, 401);
    const visit = await get(`${d.address}/queue?token=${d.token}&x=1`);
    assert.equal(visit.status, 303);
    assert.equal(visit.headers.get('location'), '/queue?x=1', 'the token left the URL');
    const setCookie = visit.headers.get('set-cookie') ?? '';
    assert.match(setCookie, /HttpOnly; SameSite=Strict; Path=\//);
    assert.ok(!setCookie.includes(d.token!), 'the cookie does not carry the token itself');
    const cookie = setCookie.split(';')[0]!;
    assert.equal((await get(`${d.address}/queue`, { headers: { cookie } })).status, 200);
    assert.equal(
      (await get(`${d.address}/queue`, { headers: { cookie: `${cookie.split('=')[0]}=${d.token}` } })).status,
      401,
      'the token as a cookie is no session',
    );
  });
});

test('a results directory or file linked out of the results root is not served', async () => {
  await withDashboard(async (d, _prefix, root) => {
    const results = join(root, 'results');
    mkdirSync(join(results, 'exp1', 'sub'), { recursive: true });
    writeFileSync(join(results, 'exp1', 'report.md'), '# report\n');
    writeFileSync(join(results, 'exp1', 'sub', 'a.csv'), 'x\n');
    symlinkSync('/etc', join(results, 'etc-exp'));
    symlinkSync('/etc', join(results, 'exp1', 'etc'));
    symlinkSync('/etc/passwd', join(results, 'exp1', 'passwd'));
    mkdirSync(join(root, 'elsewhere'));
    writeFileSync(join(root, 'elsewhere', 'report.md'), 'not served\n');
    symlinkSync(join(root, 'elsewhere'), join(results, 'exp2'));

    for (const path of [
      '/results/etc-exp/passwd',
      '/results/exp1/etc/passwd',
      '/results/exp1/passwd',
      '/results/exp2/report.md',
    ]) {
      const res = await d.get(path);
      assert.equal(res.status, 404, `${path}: ${res.status} ${res.text.slice(0, 80)}`);
      assert.doesNotMatch(res.text, /root:|not served/);
    }
    const page = await d.get('/experiments/etc-exp');
    assert.doesNotMatch(page.text, /passwd/, 'the experiment page lists no file of a linked directory');
    assert.equal((await d.get('/results/exp1/report.md')).text, '# report\n');
    assert.equal((await d.get('/results/exp1/sub/a.csv')).text, 'x\n');
  });
});

test('run.env values, grant MACs and alert webhooks are masked in bull-board and in spec.yaml', async () => {
  const secret = 'sekrit-env-value-42';
  const mac = 'ab'.repeat(32);
  await withDashboard(
    async (d, _prefix, root) => {
      const job = await d.get('/bull/api/queues?activeQueue=host-h1&status=waiting&page=1');
      assert.equal(job.status, 200, `bull-board: ${job.text.slice(0, 400)}`);
      assert.match(job.text, /API_TOKEN/, "the variable's name is shown");
      for (const s of [secret, mac]) assert.ok(!job.text.includes(s), `bull-board shows ${s}`);
      assert.match(job.text, /\[redacted\]/);

      const dir = join(root, 'results', 'exp1');
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        join(dir, 'spec.yaml'),
        `name: x\n# the token\nworkload:\n  runtime: command\n  run:\n    cmd: ./bench\n    env: { API_TOKEN: ${secret}, OTHER: &o other-${secret} }\n  toggles: { t: { env: T, on: "1", off: "0" } }\nnotes: *o\n`,
      );
      const spec = await d.get('/results/exp1/spec.yaml');
      assert.equal(spec.status, 200);
      assert.ok(!spec.text.includes(secret), spec.text);
      assert.match(spec.text, /API_TOKEN: "\[redacted\]"/);
      assert.match(spec.text, /# the token\n/, 'comments are kept');
      assert.match(spec.text, /on: "1"/, "a toggle's env name and values are no secret");
    },
    async (prefix) => {
      await new CardRegistry(r.redis, { prefix }).register(
        'h1',
        [{ id: 'h1/cpu:0', host: 'h1', backend: 'cpu', index: 0, uuid: 'h1/cpu:0', name: 'cpu' }],
        { ttlMs: 60_000, pid: 1 },
      );
      const q = new Queue(hostQueue('h1'), { connection: r.redis, prefix });
      await q.add('block', {
        experiment: 'e',
        workload: { runtime: 'command', run: { cmd: './bench', env: { API_TOKEN: secret } } },
        alerts: { webhook: `https://hooks.example/${secret}` },
        grant: { v: 1, mac },
      });
      await q.close();
    },
  );
});
