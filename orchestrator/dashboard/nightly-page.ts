/**
 * `/nightly`: at the top, what each suite's last night found (last-night-summary.ts); then each
 * suite's history (dashboard-history.ts): per comparison an SVG of the nights — the paired
 * change with its CI band, the absolute values, the nights that alerted ringed, each point a
 * link to its night's experiment — and the last runs with their state; and the installed suite
 * schedules (orchestrator/nightly/nightly-suites.ts). All of it is the page's live part
 * (`/live?view=nightly`): a night that ends shows up without a reload.
 */
import type { FastifyInstance } from 'fastify';
import type { HistoryStore, NightlyRow } from '../../history/history-store.ts';
import { messageOf } from '../../jobs/message-of.ts';
import { NightlySuites } from '../nightly/nightly-suites.ts';
import { renderHistoryPlot } from '../nightly/render-history-plot.ts';
import { type DashboardContext, fromRedis } from './dashboard-context.ts';
import { type DashboardHistory, dashboardHistory } from './dashboard-history.ts';
import { type Html, html, raw } from './html.ts';
import { renderLastNight } from './last-night-summary.ts';
import { sendPage } from './send-page.ts';

const nightLink = (r: NightlyRow) => (r.experiment ? `/experiments/${encodeURIComponent(r.experiment)}` : null);

async function renderSchedules(ctx: DashboardContext): Promise<Html> {
  const schedules = await fromRedis(ctx, async () => {
    const suites = new NightlySuites(ctx.redis, ctx.prefix);
    try {
      return await suites.list();
    } finally {
      await suites.close();
    }
  });
  return html`<h2>Installed schedules</h2>
<table id="suites"><tr><th>suite</th><th>schedule</th><th>next run</th><th>experiments</th></tr>
${schedules.length === 0 ? html`<tr><td colspan="4" class="muted">none installed (orch nightly install SUITE.yaml)</td></tr>` : ''}
${schedules.map((s) => html`<tr><td>${s.name}</td><td>${s.cron ? `${s.cron} (${s.tz ?? 'UTC'})` : s.every ? `every ${s.every} ms` : '–'}</td><td>${s.next ? new Date(s.next).toISOString() : '–'}</td><td>${s.experiments.join(', ')}</td></tr>`)}
</table>`;
}

async function suiteSection(store: HistoryStore, suite: string): Promise<{ lastNight: Html | null; section: Html }> {
  const runs = await store.runs(suite, 10);
  const rows = await store.rows(suite);
  const series = new Map<string, NightlyRow[]>();
  for (const r of rows) {
    if (!r.arm) continue;
    const key = `${r.spec_file}\u0000${r.arm}\u0000${r.reference}`;
    series.set(key, [...(series.get(key) ?? []), r]);
  }
  const section = html`<section class="suite" id="suite-${suite}"><h2>${suite}</h2>
${[...series.values()].map((s) => html`<figure class="nightly-plot">${raw(renderHistoryPlot(s, nightLink))}</figure>`)}
<table class="runs"><tr><th>night</th><th>state</th><th>alerts</th><th>error</th></tr>
${runs.map((r) => html`<tr><td>${new Date(r.scheduled_at).toISOString()}</td><td>${r.state}</td><td>${r.alerts}</td><td>${r.error ?? ''}</td></tr>`)}
</table></section>`;
  return { lastNight: runs[0] ? renderLastNight(runs[0], rows) : null, section };
}

async function historySection(history: DashboardHistory): Promise<Html> {
  let store: HistoryStore | null;
  try {
    store = await history.get();
  } catch (err) {
    return html`<p id="history-error" class="bad">The nightly history ${history.where} could not be read: ${messageOf(err)}</p>`;
  }
  if (!store)
    return html`<p id="no-history">No nightly history at ${history.where} yet: it is written by orch serve when a suite's night ends (orch nightly install SUITE.yaml).</p>`;
  const suites = await store.suites();
  if (suites.length === 0) return html`<p id="no-history">No nightly run recorded in ${history.where} yet.</p>`;
  const parts = await Promise.all(suites.map((suite) => suiteSection(store, suite)));
  return html`<section id="last-night"><h2>Last night</h2>${parts.map((p) => p.lastNight)}</section>
${parts.map((p) => p.section)}`;
}

/** The page's live part: the history and the schedules. */
export async function renderNightly(ctx: DashboardContext): Promise<Html> {
  return html`${await historySection(dashboardHistory(ctx))}
${await renderSchedules(ctx)}`;
}

export function registerNightlyPage(app: FastifyInstance, ctx: DashboardContext): void {
  dashboardHistory(ctx, app);
  app.get('/nightly', (_req, reply) =>
    sendPage(
      ctx,
      reply,
      { title: 'Nightly', nav: 'nightly', live: '/live?view=nightly' },
      async () => html`<div data-live>${await renderNightly(ctx)}</div>`,
    ),
  );
}
