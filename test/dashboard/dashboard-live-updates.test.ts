// Every dashboard page keeps what it shows while its live feed updates it. The live-update
// client once took `<body data-live>` for the fragment's target (querySelector('[data-live]')),
// so the first update replaced the whole body: on the cluster, queue and experiment pages the
// verdict, tables, plots, navigation and Cancel were gone within 1–3 s. The browser test and the
// screenshots looked before the first update and never saw it. Here each page of a running
// cluster (redis-server, orch serve, orch worker with the fixture rank) with a running
// experiment is opened in Debian's chromium, several live updates are counted as they arrive
// (the EventSource's `fragment` events, counted by a script the browser runs before the page's
// own), the page is reloaded and updated several times again, and then everything the page
// showed is asserted to be there still. The experiments list also shows an experiment submitted
// while it is open, and each page's screenshot is taken after its updates (copied to the folder
// ORCH_DASHBOARD_SCREENSHOTS names: scripts/dashboard-screenshots.mjs sets it to docs/screenshots).
// Without /usr/bin/chromium the test is skipped, except under ORCH_REQUIRE_SUITES (test/utils/required-suite.ts), where it fails.

import assert from 'node:assert/strict';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { openHistory } from '../../history/open-history.ts';
import { row } from '../history/nightly-row.ts';
import { type Cluster, type OrchChild, runOrch, spawnOrch, startCluster } from '../orchestrator/orch-cluster.ts';
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

/** Live updates a page must take, before and again after its reload, before it is looked at. */
const UPDATES = 3;
const NAV = ['Cluster', 'Queue', 'Experiments', 'Nightly', 'BullMQ', '/metrics'];
const DAY = 24 * 3600 * 1000;

// Runs in the page before its own scripts: counts the fragments its live feed delivers, and notes
// an \`ended\` (the feed's last word to a page loaded after its experiment ended: no reload follows).
const COUNT_FRAGMENTS = `(() => {
  window.__fragments = 0;
  window.__ended = false;
  const Native = window.EventSource;
  window.EventSource = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('fragment', () => { window.__fragments += 1; });
      this.addEventListener('ended', () => { window.__ended = true; });
    }
  };
})();`;

async function fragments(page: Page): Promise<number> {
  return page.evaluate(() => (window as unknown as { __fragments: number }).__fragments);
}

/** Waits for `n` live updates of the page as loaded now. */
async function liveUpdates(page: Page, n: number, what: string): Promise<void> {
  await waitFor(`${n} live updates of ${what}`, async () => (await fragments(page)) >= n, {
    timeoutMs: 60_000,
    intervalMs: 100,
  });
}

/** The frame every page has: the navigation, the title, the live part. */
async function assertFrame(page: Page, title: string): Promise<void> {
  assert.deepEqual(await page.locator('header a').allTextContents(), NAV, `${title}: the navigation`);
  assert.equal(await page.locator('main > h1').textContent(), title);
  assert.equal(await page.locator('main [data-live]').count(), 1, `${title}: its live part`);
}

/** Opens `path`, takes UPDATES updates, reloads, takes UPDATES more, then runs `check`. */
async function afterUpdates(page: Page, path: string, title: string, check: () => Promise<void>): Promise<void> {
  await page.goto(path);
  await liveUpdates(page, UPDATES, title);
  await assertFrame(page, title);
  await check();
  await page.reload();
  await liveUpdates(page, UPDATES, `${title} after a reload`);
  await assertFrame(page, title);
  await check();
}

/** Four nights of two comparisons: last night one regressed (confirmed) and one was slower but not confirmed after correction. */
async function seedNightly(file: string, experiment: string): Promise<void> {
  const history = await openHistory({ url: null, file });
  const comparisons = [
    {
      arm: 'graph-with-pdl',
      changes: [0.004, -0.002, 0.001, 0.05],
      last: { verdict: 'slower', finding: 'regression' },
    },
    {
      arm: 'pdl-only',
      changes: [0.001, 0.003, -0.001, 0.012],
      last: { verdict: 'slower', finding: 'slower-uncorrected' },
    },
  ];
  try {
    const now = Date.now();
    const nights = comparisons[0]!.changes.length;
    for (let i = 0; i < nights; i++) {
      const at = now - (nights - 1 - i) * DAY;
      const last = i === nights - 1;
      const { run } = await history.claimRun({
        suite: 'live',
        scheduledAt: at,
        orchVersion: null,
        orchCommit: null,
        serveHost: 'h1',
      });
      const rows = comparisons.map(({ arm, changes, last: l }) => {
        const change = changes[i]!;
        const reference = 2 + 0.01 * Math.sin(i);
        return row({
          run_id: run.id,
          suite: 'live',
          scheduled_at: at,
          spec_name: 'a-long-spec-name',
          arm,
          reference: 'eager-baseline',
          experiment,
          verdict: last ? l.verdict : 'inconclusive',
          change,
          ci_low: change - 0.01,
          ci_high: change + 0.01,
          arm_value: reference * (1 + change),
          reference_value: reference,
          finding: last ? l.finding : null,
          commits: { '/src/app': `c0ffee${i}${'0'.repeat(33)}` },
        });
      });
      await history.finishRun(run.id, { state: 'done', error: null, alerts: last ? 1 : 0, rows });
    }
  } finally {
    await history.close();
  }
}

function longSpec(dir: string): string {
  const file = join(dir, 'long-ab.yaml');
  // tiny-ab with enough blocks to outlast the visit: the test cancels it when done
  writeFileSync(
    file,
    readFileSync('test/fixtures/specs/tiny-ab.yaml', 'utf8')
      .replace('name: tiny-ab', 'name: long-ab')
      .replace('blocks: { count: 3, ranks: 1 }', 'blocks: { count: 60, ranks: 1 }'),
  );
  return file;
}

async function experimentIds(c: Cluster): Promise<string[]> {
  return c.redis.zrange(`${c.prefix}:exps`, '0', '-1');
}

test('every dashboard page keeps its verdict, tables, plots, navigation and Cancel through live updates and a reload', {
  skip: missing,
  timeout: 600_000,
}, async () => {
  const c = await startCluster();
  const dir = mkdtempSync(join(tmpdir(), 'orch-dash-live-'));
  const shots = join(dir, 'screenshots');
  mkdirSync(shots);
  const results = join(dir, 'results');
  const historyFile = join(dir, 'history.sqlite');
  process.env.ORCH_HISTORY_DB = historyFile;
  let browser: BrowserContext | null = null;
  const d = await testDashboard({ url: c.url, prefix: c.prefix, resultsRoot: results });
  // submits still running when an assertion fails are killed, or the test would wait on them
  const submits: OrchChild[] = [];
  const submit = (spec: string) => {
    const s = spawnOrch(['submit', spec, '--results', results], c.env);
    submits.push(s);
    return s;
  };
  const shoot = (page: Page, name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  try {
    c.startServe();
    await c.startWorker({ cpuCards: 1, repMs: 700 });
    // one experiment ended (its outcome in the list, its page with nothing more to follow) ...
    const short = await runOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml', '--results', results], c.env, 120_000);
    const [done] = await experimentIds(c);
    assert.equal(await c.redis.hget(`${c.prefix}:experiment:${done}`, 'state'), 'done', short.stderr);
    // ... and one running, with a block committed so its verdict, tables and plots exist
    const long = submit(longSpec(dir));
    const running = await waitFor(
      'the long experiment registered',
      async () => (await experimentIds(c)).find((x) => x !== done),
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    await waitFor(
      'a block of the long experiment committed',
      async () => (await c.redis.hlen(`${c.prefix}:experiment:${running}:commits`)) > 0,
      { timeoutMs: 60_000, intervalMs: 100 },
    );

    browser = await chromium.launchPersistentContext(join(dir, 'profile'), {
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
    await browser.addInitScript(COUNT_FRAGMENTS);
    const page = browser.pages()[0] ?? (await browser.newPage());
    await page.goto(`${d.address}/?token=${d.token}`);
    const at = (path: string) => `${d.address}${path}`;

    await afterUpdates(page, at('/'), 'Cluster', async () => {
      assert.equal(await page.locator('#cards tr[data-card]').count(), 1);
      assert.match((await page.locator('#cards tr[data-card]').textContent()) ?? '', new RegExp(running));
      assert.equal(await page.locator('#hosts tr').count(), 2, 'the header and host h1');
    });
    await shoot(page, 'cluster');

    await afterUpdates(page, at('/queue'), 'Queue', async () => {
      const section = page.locator(`section[data-experiment="${running}"]`);
      assert.equal(await section.count(), 1);
      assert.ok(await section.locator('form.cancel button').isVisible(), 'the Cancel button');
      assert.ok((await section.locator('tr[data-block]').count()) > 0, 'the blocks table');
    });
    await shoot(page, 'queue');

    const experimentPage = (id: string, runningNow: boolean) => async () => {
      assert.match(
        (await page.locator('main h2').first().textContent()) ?? '',
        /^Verdict: (faster|slower|equivalent|inconclusive|invalid)$/,
      );
      for (const table of ['#about', '#progress', '#gates', '#arms', '#comparisons'])
        assert.equal(await page.locator(table).count(), 1, `${id}: ${table}`);
      const plot = page.locator('figure.plot[data-plot="arms.svg"] svg');
      assert.ok(((await plot.boundingBox())?.height ?? 0) > 50, `${id}: the arms plot has a size`);
      assert.equal(
        await page.locator('form.cancel button').count(),
        runningNow ? 1 : 0,
        `${id}: Cancel while it runs only`,
      );
      if (runningNow) assert.ok(await page.locator('form.cancel button').isVisible());
    };
    await afterUpdates(page, at(`/experiments/${running}`), `Experiment ${running}`, experimentPage(running, true));
    await shoot(page, 'experiment');

    // An ended experiment's feed sends one fragment and `ended`: the page must keep the rest.
    await page.goto(at(`/experiments/${done}`));
    await liveUpdates(page, 1, `the ended experiment ${done}`);
    await assertFrame(page, `Experiment ${done}`);
    await experimentPage(done!, false)();

    await afterUpdates(page, at('/experiments'), 'Experiments', async () => {
      assert.equal(await page.locator('form#filter select[name="verdict"]').count(), 1, 'the filter form');
      const ended = page.locator(`#experiments tr[data-experiment="${done}"] td`);
      const cells = await ended.allTextContents();
      assert.equal(cells[3], '12/12', `reps of ${done}: ${cells.join(' | ')}`);
      assert.match(cells[4]!, /^(faster|slower|equivalent|inconclusive|invalid)$/, 'verdict');
      assert.match(cells[5]!, /^[+−]\d+\.\d\d %$/, 'change');
      assert.match(cells[6]!, /^[+−]\d+\.\d\d % – [+−]\d+\.\d\d %$/, 'CI');
      assert.match(cells[7]!, /^\d+ s$|min/, 'duration');
      assert.equal(
        await page.locator(`#experiments tr[data-experiment="${running}"] td.state`).textContent(),
        'running',
      );
    });
    // the running experiment's reps count live: reps of its running block beside the committed
    // count, marked "+N running" (they count once the block commits), changing without a reload
    const repsCell = page.locator(`#experiments tr[data-experiment="${running}"] td.reps`);
    const loadsNow = await page.evaluate(() => performance.getEntriesByType('navigation').length);
    const shown = await waitFor(
      "the running block's reps on the list",
      async () => {
        const text = (await repsCell.textContent()) ?? '';
        return /^\d+\/\d+ \+[1-9]\d* running$/.test(text) ? text : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    await waitFor(
      'the reps cell updated live',
      async () => ((await repsCell.textContent()) !== shown ? true : undefined),
      {
        timeoutMs: 30_000,
        intervalMs: 100,
      },
    );
    assert.equal(await page.evaluate(() => performance.getEntriesByType('navigation').length), loadsNow, 'no reload');
    // an experiment submitted while the list is open appears in it by itself
    const loadsBefore = await page.evaluate(() => performance.getEntriesByType('navigation').length);
    const third = submit('test/fixtures/specs/tiny-ab.yaml');
    const queued = await waitFor(
      'a third experiment registered',
      async () => (await experimentIds(c)).find((x) => x !== done && x !== running),
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    await page
      .locator(`#experiments tr[data-experiment="${queued}"] td.state`, { hasText: 'queued' })
      .waitFor({ timeout: 30_000 });
    assert.equal(
      await page.evaluate(() => performance.getEntriesByType('navigation').length),
      loadsBefore,
      'no reload',
    );
    await assertFrame(page, 'Experiments');
    await shoot(page, 'experiments');

    // last night ended just now: its "ended N s ago" is the nightly page's live update
    await seedNightly(historyFile, done!);
    await afterUpdates(page, at('/nightly'), 'Nightly', async () => {
      const regressed = page.locator('#last-night tr[data-finding="regression"]');
      assert.equal(await regressed.count(), 1, 'last night regressed');
      assert.equal(
        await regressed.locator(`a[href="/experiments/${done}"]`).count(),
        1,
        "a link to the night's experiment",
      );
      assert.match((await regressed.locator('code.commit').textContent()) ?? '', /^c0ffee3/);
      assert.match(
        (await page.locator('#last-night tr[data-finding="slower-uncorrected"]').textContent()) ?? '',
        /slower, not confirmed after correction.*pdl-only vs eager-baseline/,
      );
      assert.equal(await page.locator('figure.nightly-plot svg').count(), 2, 'a plot per comparison');
      const svg = page.locator('figure.nightly-plot svg').first();
      assert.equal(await svg.locator('text.night-label').count(), 4, 'each of the four nights labelled');
      assert.deepEqual(await svg.locator('text.legend').allTextContents(), [
        'change graph-with-pdl vs eager-baseline (CI band)',
        'graph-with-pdl',
        'eager-baseline',
        'alert (ringed)',
      ]);
      assert.equal(await svg.locator('a.night-link').count(), 12, 'every point of the three lines links to its night');
    });
    await shoot(page, 'nightly');

    await page.goto(at('/bull'));
    for (const q of ['nightly', 'host-h1'])
      await page.getByText(q, { exact: true }).first().waitFor({ timeout: 30_000 });
    await shoot(page, 'bull-board');

    // the running experiment's own Cancel button ends it; its page reloads to the ended state
    await page.goto(at(`/experiments/${running}`));
    await page.locator('form.cancel button').click();
    // The live fragment says "cancelled" first; then the feed tells a page that watched it run to
    // reload (layout.ts), and a page read during that reload loses its context (a full run once
    // failed so: "Execution context was destroyed"). Done is a page loaded after the end: its
    // feed said `ended`, and nothing reloads it again.
    await waitFor(
      'the long experiment cancelled, on a page loaded after its end',
      () =>
        page
          .evaluate(
            () =>
              (window as unknown as { __ended: boolean }).__ended &&
              document.getElementById('state')?.textContent === 'cancelled',
          )
          .catch(() => false),
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    await assertFrame(page, `Experiment ${running}`);
    await runOrch(['cancel', queued], c.env);
    await long.exited;
    await third.exited;

    const saved = readdirSync(shots).sort();
    assert.deepEqual(saved, [
      'bull-board.png',
      'cluster.png',
      'experiment.png',
      'experiments.png',
      'nightly.png',
      'queue.png',
    ]);
    const to = process.env.ORCH_DASHBOARD_SCREENSHOTS;
    if (to) {
      mkdirSync(to, { recursive: true });
      for (const f of saved) copyFileSync(join(shots, f), join(to, f));
      console.log(`screenshots copied to ${to}`);
    }
  } finally {
    for (const s of submits) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
    await browser?.close();
    await d.close();
    await c.stop();
    delete process.env.ORCH_HISTORY_DB;
    rmSync(dir, { recursive: true, force: true });
  }
});
