/**
 * `/experiments/:id`: one experiment — live progress while it runs, then its gates with reasons,
 * the arm table, the paired comparisons, the leave-one-out table and the plots (the report's own
 * SVG renderers), and links to every file of its results directory.
 */

import type { FastifyInstance } from 'fastify';
import { escapeRankText } from '../../jobs/rank-text.ts';
import { ExperimentStore, TERMINAL_EXPERIMENT_STATES } from '../../store/experiment-store.ts';
import type { Progress } from '../experiment/progress.ts';
import { allComparisons } from '../report/all-comparisons.ts';
import { renderPlots } from '../report/render-plots.ts';
import { collectResults } from '../results/collect-results.ts';
import { analyzeRecords } from '../results/write-results.ts';
import type { Analysis } from '../stats/types.ts';
import { type DashboardContext, fromRedis } from './dashboard-context.ts';
import { hostsOf } from './experiments-list-page.ts';
import { type Html, html, num, pct, raw } from './html.ts';
import { cancelForm, progressBar, readProgress } from './queue-page.ts';
import { listResultFiles } from './results-files.ts';
import { NotFound, sendPage } from './send-page.ts';

/** The live part of an experiment's page: state and per-block progress. */
export function renderExperimentProgress(p: Progress): Html {
  return html`<p>state <strong id="state">${p.state}</strong></p>
<table id="progress"><tr><th>block</th><th>phase</th><th>reps</th><th>latest rep</th><th>waiting because</th></tr>
${p.blocks.map(
  (
    b,
  ) => html`<tr><td>${b.block}</td><td>${b.phase}${b.attempt > 1 ? ` (attempt ${b.attempt})` : ''}</td><td>${progressBar(b.done, b.planned)}</td>
<td>${b.latest ? `${b.latest.arm} ${b.latest.mode}/${b.latest.backend} ${num(b.latest.median_ms)} ms/step` : ''}</td><td>${b.phase === 'waiting' ? (b.why ?? '') : ''}</td></tr>`,
)}
</table>`;
}

/** Issues shown open; more (a running experiment lists every rep not yet arrived) are folded under their count. */
const ISSUES_OPEN = 10;

function renderAnalysis(a: Analysis): Html {
  const plots = renderPlots(a);
  return html`<h2>Verdict: <span class="${a.verdict === 'invalid' ? 'bad' : ''}">${a.verdict}</span></h2>
${a.invalid_reasons.length > 0 ? html`<ul class="bad">${a.invalid_reasons.map((r) => html`<li>${r}</li>`)}</ul>` : ''}
<h2>Gates</h2>
<table id="gates"><tr><th>gate</th><th>result</th><th>why</th></tr>
${a.gates.map((g) => html`<tr><td>${g.name}</td><td class="${g.pass === false ? 'bad' : g.pass ? 'ok' : 'muted'}">${g.pass === null ? 'not applied' : g.pass ? 'pass' : 'FAIL'}</td><td>${g.message}</td></tr>`)}
</table>
<h2>Arms</h2>
<table id="arms"><tr><th>arm</th><th>n</th><th>planned</th><th>missing</th><th>mean</th><th>median</th><th>sd</th><th>CI</th><th>cv</th><th>not measured</th></tr>
${a.arms.map(
  (
    s,
  ) => html`<tr><td>${s.arm}${s.aa_of ? html` <span class="muted">(A/A of ${s.aa_of})</span>` : ''}</td><td class="num">${s.n}</td><td class="num">${s.planned}</td><td class="num">${s.missing}</td>
<td class="num">${num(s.mean)}</td><td class="num">${num(s.median)}</td><td class="num">${num(s.sd)}</td><td class="num">${s.ci ? `${num(s.ci[0])} – ${num(s.ci[1])}` : '–'}</td><td class="num">${pct(s.cv)}</td><td>${s.unsupported.map((u) => u.note).join('; ')}</td></tr>`,
)}
</table>
<p class="muted">${a.metric.name} (${a.metric.statistic} per rep, ${a.metric.better} is better)</p>
<h2>Paired comparisons</h2>
<table id="comparisons"><tr><th>arm</th><th>against</th><th>pairs</th><th>relative</th><th>CI</th><th>p</th><th>verdict</th><th>statement</th></tr>
${allComparisons(a).map(
  (
    c,
  ) => html`<tr><td>${c.arm}</td><td>${c.reference}</td><td class="num">${c.pairs}</td><td class="num">${pct(c.relative.estimate, 2)}</td>
<td class="num">${c.relative.ci ? `${pct(c.relative.ci[0], 2)} – ${pct(c.relative.ci[1], 2)}` : '–'}${c.sequential_look === undefined ? '' : ` (repeated, look ${c.sequential_look})`}</td><td class="num">${num(c.log_ratio.p, 4)}</td><td>${c.verdict}</td><td>${c.statement}</td></tr>`,
)}
</table>
${
  a.loo
    ? html`<h2>Leave-one-out</h2><table id="loo"><tr><th>toggle</th><th>arm</th><th>worth</th><th>relative</th><th>p</th><th>share</th><th>note</th></tr>
${a.loo.rows.map((r) => html`<tr><td>${r.toggle}</td><td>${r.arm}</td><td class="num">${num(r.worth)}</td><td class="num">${pct(r.worth_rel, 2)}</td><td class="num">${num(r.p, 4)}</td><td class="num">${pct(r.share)}</td><td>${r.unsupported ?? ''}</td></tr>`)}
</table><p>${a.loo.message}</p>`
    : ''
}
<h2>Plots</h2>
${Object.entries(plots).map(([file, svg]) => html`<figure class="plot" data-plot="${file}">${raw(svg)}<figcaption>${file}</figcaption></figure>`)}
${a.issues.length > 0 ? html`<h2>Issues</h2><details id="issues"${a.issues.length <= ISSUES_OPEN ? raw(' open') : ''}><summary>${a.issues.length} issue${a.issues.length === 1 ? '' : 's'}</summary><ul>${a.issues.map((i) => html`<li>${i}</li>`)}</ul></details>` : ''}`;
}

async function renderExperiment(ctx: DashboardContext, id: string): Promise<Html> {
  return fromRedis(ctx, async () => {
    const store = new ExperimentStore(ctx.redis, ctx.prefix);
    const exp = await store.get(id);
    if (!exp)
      throw new NotFound(
        `No experiment "${id}" in this Redis (prefix ${ctx.prefix}): it was never submitted here, or its keys were removed. The list of experiments is at /experiments.`,
      );
    const ended = TERMINAL_EXPERIMENT_STATES.has(exp.state);
    const collected = await collectResults(ctx.redis, ctx.prefix, id);
    const analysis = Object.keys(collected.reps).length > 0 ? analyzeRecords(collected) : null;
    const files = listResultFiles(ctx, id);
    return html`<table id="about"><tr><th>name</th><td>${exp.name}</td></tr><tr><th>spec hash</th><td><code>${exp.hash}</code></td></tr>
<tr><th>file</th><td>${exp.file}</td></tr><tr><th>submitted</th><td>${new Date(exp.created).toISOString()}</td></tr>
<tr><th>ended</th><td>${exp.ended ? new Date(exp.ended).toISOString() : '–'}${exp.reason ? ` (${escapeRankText(exp.reason)})` : ''}</td></tr>
<tr><th>hosts</th><td>${(await hostsOf(store, id)).join(', ')}</td></tr><tr><th>priority</th><td>${exp.priority}</td></tr></table>
${ended ? '' : cancelForm(ctx, id)}
<div data-live>${renderExperimentProgress(await readProgress(ctx, exp))}</div>
${analysis ? renderAnalysis(analysis) : html`<p class="muted">No rep committed yet: the tables and plots appear when a block commits.</p>`}
<h2>Results directory</h2>
${
  files.length === 0
    ? html`<p class="muted">No results/${id}/ under ${ctx.resultsRoot}: it is written when orch submit (or orch report) collects the experiment.</p>`
    : html`<ul id="files">${files.map((f) => html`<li><a href="/results/${encodeURIComponent(id)}/${f.split('/').map(encodeURIComponent).join('/')}">${f}</a></li>`)}</ul>`
}`;
  });
}

export function registerExperimentPages(app: FastifyInstance, ctx: DashboardContext): void {
  app.get<{ Params: { id: string } }>('/experiments/:id', (req, reply) =>
    sendPage(
      ctx,
      reply,
      {
        title: `Experiment ${req.params.id}`,
        nav: 'experiments',
        live: `/live/experiments/${encodeURIComponent(req.params.id)}`,
      },
      () => renderExperiment(ctx, req.params.id),
    ),
  );
}
