// The dashboard in a real browser: Debian's chromium (never a downloaded one) driven by
// playwright-core, against a real cluster (redis-server, orch serve, orch worker with the fixture
// rank). An experiment is submitted; its page follows the progress live to done, then shows the
// arm table and a plot; the cluster, queue, experiments and nightly pages render; bull-board
// lists the queues. A screenshot of each page is saved in a temp dir, and copied to the folder
// ORCH_DASHBOARD_SCREENSHOTS names (e.g. docs/screenshots) only when it is set.
// Without /usr/bin/chromium the test is skipped, except under CI, where it fails.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { spawnOrch, startCluster } from '../orchestrator/orch-cluster.ts';
import { waitFor } from '../utils/wait-for.ts';
import { testDashboard } from './dashboard-harness.ts';

const CHROMIUM = '/usr/bin/chromium';
const missing = !existsSync(CHROMIUM);
if (missing && process.env.CI) throw new Error(`${CHROMIUM} is missing under CI: .ci/run installs chromium (apt-get install -y chromium)`);

test('dashboard in chromium: live progress to done, arm table, plot, bull-board', { skip: missing ? `${CHROMIUM} not installed (apt-get install -y chromium): the browser test needs Debian's chromium` : false }, async () => {
  const c = await startCluster();
  const dir = mkdtempSync(join(tmpdir(), 'orch-dash-browser-'));
  const shots = join(dir, 'screenshots');
  mkdirSync(shots);
  const results = join(dir, 'results');
  const d = await testDashboard({ url: c.url, prefix: c.prefix, resultsRoot: results });
  const browser = await chromium.launchPersistentContext(join(dir, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 900 },
  });
  const shoot = (page: Page, name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  try {
    c.startServe();
    await c.startWorker({ cpuCards: 1, repMs: 600 });
    const submit = spawnOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml', '--results', results], c.env);
    const id = await waitFor('the experiment registered', async () => (await c.redis.zrange(`${c.prefix}:exps`, '0', '-1'))[0], { timeoutMs: 30_000, intervalMs: 50 });

    const page = browser.pages()[0] ?? (await browser.newPage());
    await page.goto(`${d.address}/experiments/${id}`);
    const first = (await page.locator('#state').textContent()) ?? '';
    console.log(`experiment page opened in state ${first}`);
    await page.goto(`${d.address}/`);
    await page.locator('#cards tr[data-card]').first().waitFor({ timeout: 30_000 });
    await page.locator('#cards', { hasText: String(id) }).waitFor({ timeout: 30_000 });
    await shoot(page, 'cluster');
    await page.goto(`${d.address}/queue`);
    await page.locator(`section[data-experiment="${id}"]`).waitFor({ timeout: 30_000 });
    await shoot(page, 'queue');

    // The experiment's page, opened while it runs, follows it to done by itself (SSE), then
    // reloads to show the tables and plots.
    await page.goto(`${d.address}/experiments/${id}`);
    const seen = new Set<string>();
    await waitFor('the page shows done', async () => {
      const s = (await page.locator('#state').textContent().catch(() => null)) ?? '';
      seen.add(s);
      return s === 'done';
    }, { timeoutMs: 120_000, intervalMs: 100 });
    console.log(`states shown on one page load: ${[...seen].join(' → ')}`);
    await page.locator('#arms').waitFor({ timeout: 30_000 });
    const arms = await page.locator('#arms tr').allTextContents();
    assert.ok(arms.some((r) => r.startsWith('eager')) && arms.some((r) => r.startsWith('graph')), arms.join('\n'));
    const plot = page.locator('figure.plot[data-plot="arms.svg"] svg');
    await plot.waitFor({ state: 'visible', timeout: 10_000 });
    assert.ok(((await plot.boundingBox())?.height ?? 0) > 50, 'the plot has a size');
    await submit.exited;
    await page.reload();
    await page.locator('#files a', { hasText: 'report.md' }).waitFor({ timeout: 30_000 });
    await shoot(page, 'experiment');
    const report = await page.request.get(`${d.address}/results/${id}/report.md`);
    assert.equal(report.status(), 200);

    await page.goto(`${d.address}/experiments?state=done`);
    await page.locator('#experiments', { hasText: String(id) }).waitFor({ timeout: 10_000 });
    await shoot(page, 'experiments');
    await page.goto(`${d.address}/nightly`);
    await page.locator('#no-history').waitFor({ timeout: 10_000 });
    await shoot(page, 'nightly');

    await page.goto(`${d.address}/bull`);
    for (const q of ['nightly', 'host-h1']) await page.getByText(q, { exact: true }).first().waitFor({ timeout: 30_000 });
    await shoot(page, 'bull-board');

    const saved = readdirSync(shots).sort();
    assert.deepEqual(saved, ['bull-board.png', 'cluster.png', 'experiment.png', 'experiments.png', 'nightly.png', 'queue.png']);
    const to = process.env.ORCH_DASHBOARD_SCREENSHOTS;
    if (to) {
      mkdirSync(to, { recursive: true });
      for (const f of saved) copyFileSync(join(shots, f), join(to, f));
      console.log(`screenshots copied to ${to}`);
    }
  } finally {
    await browser.close();
    await d.close();
    await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
