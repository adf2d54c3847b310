/**
 * `/nightly`: the installed suite schedules (orchestrator/nightly/nightly-suites.ts). orch keeps
 * no history of suite runs yet, so the page says so instead of showing an empty chart.
 */
import type { FastifyInstance } from 'fastify';
import { NightlySuites } from '../nightly/nightly-suites.ts';
import { fromRedis, type DashboardContext } from './dashboard-context.ts';
import { html } from './html.ts';
import { sendPage } from './send-page.ts';

export function registerNightlyPage(app: FastifyInstance, ctx: DashboardContext): void {
  app.get('/nightly', (_req, reply) =>
    sendPage(ctx, reply, { title: 'Nightly', nav: 'nightly' }, () =>
      fromRedis(ctx, async () => {
        const suites = new NightlySuites(ctx.redis, ctx.prefix);
        try {
          const list = await suites.list();
          return html`<p id="no-history">No history: orch does not record past suite runs yet, so there is no trend per suite to show. The experiments each run submitted are in <a href="/experiments">Experiments</a>.</p>
<h2>Installed schedules</h2>
<table id="suites"><tr><th>suite</th><th>schedule</th><th>next run</th><th>experiments</th></tr>
${list.length === 0 ? html`<tr><td colspan="4" class="muted">none installed (orch nightly install SUITE.yaml)</td></tr>` : ''}
${list.map((s) => html`<tr><td>${s.name}</td><td>${s.cron ? `${s.cron} (${s.tz ?? 'UTC'})` : s.every ? `every ${s.every} ms` : '–'}</td><td>${s.next ? new Date(s.next).toISOString() : '–'}</td><td>${s.experiments.join(', ')}</td></tr>`)}
</table>`;
        } finally {
          await suites.close();
        }
      }),
    ),
  );
}
