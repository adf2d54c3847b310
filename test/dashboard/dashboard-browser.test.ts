// The dashboard in a real browser: Debian's chromium (never a downloaded one) driven by
// playwright-core, against a real cluster (redis-server, orch serve, orch worker with the fixture
// rank). The browser signs in once through the printed `?token=` URL (the cookie does the rest);
// a page on another loopback port that posts a cancel form to the dashboard is refused (403) and
// cancels nothing, while the queue page's own Cancel button cancels a second experiment. The
// first experiment's page follows the progress live to done, then shows the arm table and a
// plot; the cluster, queue, experiments and nightly pages render; bull-board lists the queues.
// The screenshots in docs/screenshots come from dashboard-live-updates.test.ts, taken after each
// page's live updates (this test looks at pages before their first update).
// Without /usr/bin/chromium the test is skipped, except under ORCH_REQUIRE_SUITES (test/utils/required-suite.ts), where it fails.

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { chromium } from 'playwright-core';
import { spawnOrch, startCluster } from '../orchestrator/orch-cluster.ts';
import { suiteSkip } from '../utils/required-suite.ts';
import { waitFor } from '../utils/wait-for.ts';
import { testDashboard } from './dashboard-harness.ts';

const CHROMIUM = '/usr/bin/chromium';
const missing = suiteSkip(
  'chromium',
  existsSync(CHROMIUM)
    ? null
    : `${CHROMIUM} not installed (apt-get install -y chromium): the browser tests need Debian's chromium`,
);

test('dashboard in chromium: token sign-in, cross-origin cancel refused, own cancel works, live progress to done, arm table, plot, bull-board', {
  skip: missing,
}, async () => {
  const c = await startCluster();
  const dir = mkdtempSync(join(tmpdir(), 'orch-dash-browser-'));
  const results = join(dir, 'results');
  const d = await testDashboard({ url: c.url, prefix: c.prefix, resultsRoot: results });
  const browser = await chromium.launchPersistentContext(join(dir, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1280, height: 900 },
  });
  try {
    c.startServe();
    await c.startWorker({ cpuCards: 1, repMs: 900 });
    const submit = spawnOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml', '--results', results], c.env);
    const id = await waitFor(
      'the experiment registered',
      async () => (await c.redis.zrange(`${c.prefix}:exps`, '0', '-1'))[0],
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    // a second one waits behind it (one card): the cross-origin post aims at it, the Cancel button ends it
    const second = spawnOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml', '--results', results], c.env);
    const other = await waitFor(
      'a second experiment registered',
      async () => (await c.redis.zrange(`${c.prefix}:exps`, '0', '-1')).find((x) => x !== id),
      { timeoutMs: 30_000, intervalMs: 50 },
    );

    const page = browser.pages()[0] ?? (await browser.newPage());
    assert.equal((await page.goto(`${d.address}/experiments/${id}`))?.status(), 401, 'no page without the token');
    await page.goto(`${d.address}/?token=${d.token}`);
    assert.equal(page.url(), `${d.address}/`, 'the token left the address bar');

    // Another site on loopback (another port: the cookie goes along, ports do not separate
    // cookies) posts the cancel form: the dashboard refuses it, and the experiment stays queued.
    const evil = createServer((_req, res) =>
      res.end(
        `<!doctype html><form id="f" method="post" action="${d.address}/experiments/${other}/cancel"><input name="csrf" value="guess"></form><script>document.getElementById('f').submit()</script>`,
      ),
    );
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    try {
      const port = (evil.address() as { port: number }).port;
      const refused = page.waitForResponse((r) => r.url().endsWith(`/experiments/${other}/cancel`));
      await page.goto(`http://127.0.0.1:${port}/`);
      const answer = await refused;
      assert.equal(answer.status(), 403, 'a cross-origin cancel is refused');
      assert.match(await answer.text(), /from another origin \(Origin http:\/\/127\.0\.0\.1:\d+;/);
      assert.equal(await c.redis.hget(`${c.prefix}:experiment:${other}`, 'state'), 'queued');
    } finally {
      evil.close();
    }

    await page.goto(`${d.address}/`);
    await page.locator('#cards tr[data-card]').first().waitFor({ timeout: 30_000 });
    await page.locator('#cards', { hasText: String(id) }).waitFor({ timeout: 30_000 });
    await page.goto(`${d.address}/queue`);
    await page.locator(`section[data-experiment="${id}"]`).waitFor({ timeout: 30_000 });

    // The experiment's page, opened while it runs, follows it to done by itself (SSE), then
    // reloads to show the tables and plots.
    await page.goto(`${d.address}/experiments/${id}`);
    const seen = new Set<string>();
    await waitFor(
      'the page shows done',
      async () => {
        const s =
          (await page
            .locator('#state')
            .textContent()
            .catch(() => null)) ?? '';
        seen.add(s);
        return s === 'done';
      },
      { timeoutMs: 120_000, intervalMs: 100 },
    );
    console.log(`states shown on one page load: ${[...seen].join(' → ')}`);
    assert.ok(
      seen.size > 1,
      `the page, opened while the experiment ran, changed by itself to done (SSE): it showed ${[...seen].join(' → ')}`,
    );
    await page.locator('#arms').waitFor({ timeout: 30_000 });
    const arms = await page.locator('#arms tr').allTextContents();
    assert.ok(arms.some((r) => r.startsWith('eager')) && arms.some((r) => r.startsWith('graph')), arms.join('\n'));
    const plot = page.locator('figure.plot[data-plot="arms.svg"] svg');
    await plot.waitFor({ state: 'visible', timeout: 10_000 });
    assert.ok(((await plot.boundingBox())?.height ?? 0) > 50, 'the plot has a size');
    await submit.exited;
    await page.reload();
    await page.locator('#files a', { hasText: 'report.md' }).waitFor({ timeout: 30_000 });
    const report = await page.request.get(`${d.address}/results/${id}/report.md`);
    assert.equal(report.status(), 200);

    await page.goto(`${d.address}/experiments?state=done`);
    await page.locator('#experiments', { hasText: String(id) }).waitFor({ timeout: 10_000 });
    await page.goto(`${d.address}/nightly`);
    await page.locator('#no-history').waitFor({ timeout: 10_000 });

    // The queue page's own Cancel button (same origin, the page's CSRF field) cancels the second.
    await page.goto(`${d.address}/queue`);
    await page.locator(`section[data-experiment="${other}"] form.cancel button`).click();
    await page.waitForURL(`${d.address}/experiments/${other}`);
    await waitFor(
      'the second experiment is cancelled',
      async () => ['cancelling', 'cancelled'].includes((await page.locator('#state').textContent()) ?? ''),
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    await second.exited;

    await page.goto(`${d.address}/bull`);
    for (const q of ['nightly', 'host-h1'])
      await page.getByText(q, { exact: true }).first().waitFor({ timeout: 30_000 });
  } finally {
    await browser.close();
    await d.close();
    await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
