/**
 * `/nightly`: the installed suite schedules (orchestrator/nightly/nightly-suites.ts) and each
 * suite's history (dashboard-history.ts): per comparison an SVG of the nights — the paired
 * change with its CI band, the absolute values, the nights that alerted ringed — and the last
 * runs with their state.
 */
import type { FastifyInstance } from 'fastify';
import type { NightlyRow } from '../../history/history-store.ts';
import { NightlySuites } from '../nightly/nightly-suites.ts';
import { renderHistoryPlot } from '../nightly/render-history-plot.ts';
import { dashboardHistory } from './dashboard-history.ts';
import { fromRedis, type DashboardContext } from './dashboard-context.ts';
import { html, raw } from './html.ts';
import { sendPage } from './send-page.ts';

export function registerNightlyPage(app: FastifyInstance, ctx: DashboardContext): void {
  const history = dashboardHistory(ctx, app);
  app.get('/nightly', (_req, reply) =>
    sendPage(ctx, reply, { title: 'Nightly', nav: 'nightly' }, async () => {
      const schedules = await fromRedis(ctx, async () => {
        const suites = new NightlySuites(ctx.redis, ctx.prefix);
        try {
          return await suites.list();
        } finally {
          await suites.close();
        }
      });
      return html`${await historySection(history)}
<h2>Installed schedules</h2>
<table id="suites"><tr><th>suite</th><th>schedule</th><th>next run</th><th>experiments</th></tr>
${schedules.length === 0 ? html`<tr><td colspan="4" class="muted">none installed (orch nightly install SUITE.yaml)</td></tr>` : ''}
${schedules.map((s) => html`<tr><td>${s.name}</td><td>${s.cron ? `${s.cron} (${s.tz ?? 'UTC'})` : s.every ? `every ${s.every} ms` : '–'}</td><td>${s.next ? new Date(s.next).toISOString() : '–'}</td><td>${s.experiments.join(', ')}</td></tr>`)}
</table>`;
    }),
  );
}

async function historySection(history: ReturnType<typeof dashboardHistory>) {
  let store;
  try {
    store = await history.get();
  } catch (err) {
    return html`<p id="history-error" class="bad">The nightly history ${history.where} could not be read: ${(err as Error).message}</p>`;
  }
  if (!store) return html`<p id="no-history">No nightly history at ${history.where} yet: it is written by orch serve when a suite's night ends (orch nightly install SUITE.yaml).</p>`;
  const suites = await store.suites();
  if (suites.length === 0) return html`<p id="no-history">No nightly run recorded in ${history.where} yet.</p>`;
  const sections = [];
  for (const suite of suites) {
    const runs = await store.runs(suite, 10);
    const series = new Map<string, NightlyRow[]>();
    for (const r of await store.rows(suite)) {
      if (!r.arm) continue;
      const key = `${r.spec_file}\u0000${r.arm}\u0000${r.reference}`;
      series.set(key, [...(series.get(key) ?? []), r]);
    }
    sections.push(html`<section class="suite" id="suite-${suite}"><h2>${suite}</h2>
${[...series.values()].map((rows) => html`<figure class="nightly-plot">${raw(renderHistoryPlot(rows))}</figure>`)}
<table class="runs"><tr><th>night</th><th>state</th><th>alerts</th><th>error</th></tr>
${runs.map((r) => html`<tr><td>${new Date(r.scheduled_at).toISOString()}</td><td>${r.state}</td><td>${r.alerts}</td><td>${r.error ?? ''}</td></tr>`)}
</table></section>`);
  }
  return html`${sections}`;
}
