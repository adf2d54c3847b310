/**
 * `/experiments`: every registered experiment, newest first, with its reps committed and, once it ended, its outcome
 * (verdict, change and CI of the primary comparison, duration: experiment-outcome.ts), filtered
 * by the query string (state, verdict, a substring of the name or id, spec hash, host). The
 * filter form stays put; the table below it is the page's live part (`/live?view=experiments`
 * with the same query), so new experiments and state changes appear without a reload.
 */
import type { FastifyInstance } from 'fastify';
import { plannedReps } from '../../jobs/plan.ts';
import {
  EXPERIMENT_STATES,
  type ExperimentRecord,
  type ExperimentState,
  ExperimentStore,
} from '../../store/experiment-store.ts';
import { type ExperimentFilter, filterProblem, selectExperiments } from '../experiment/experiment-filter.ts';
import {
  type ExperimentOutcome,
  experimentOutcomes,
  formatChange,
  formatDuration,
} from '../experiment/experiment-outcome.ts';
import { OUTCOMES, type Outcome } from '../experiment/outcome-codes.ts';
import { uncommittedRepsOf } from '../experiment/progress.ts';
import { type DashboardContext, fromRedis } from './dashboard-context.ts';
import { ago, type Html, html, raw } from './html.ts';
import { sendPage } from './send-page.ts';

/** The query string of the page and of its live feed. */
export interface ListQuery {
  state?: string;
  verdict?: string;
  name?: string;
  hash?: string;
  host?: string;
  /** 0-based page of PAGE_ROWS, newest first */
  page?: string;
}

const QUERY_KEYS = ['state', 'verdict', 'name', 'hash', 'host', 'page'] as const;

/** The query's filter fields, in a fixed order and without empty ones: the live feed's topic and the page links. */
export function listQueryString(q: ListQuery): string {
  return new URLSearchParams(QUERY_KEYS.filter((k) => q[k]).map((k) => [k, q[k]!])).toString();
}

export async function hostsOf(store: ExperimentStore, id: string): Promise<string[]> {
  return [
    ...new Set(
      (await store.blocks(id)).flatMap((b) => [...b.gang, ...b.attempts.flatMap((a) => a.gang)].map((g) => g.host)),
    ),
  ].sort();
}

/** Rows of one page of the list, newest first. */
const PAGE_ROWS = 50;

interface Row {
  exp: ExperimentRecord;
  outcome: ExperimentOutcome | null;
  hosts: string[];
  /** reps committed */
  measured: number;
  /** reps done in running blocks, not committed yet (experiment/progress.ts) */
  uncommitted: number;
}

/** Reps of running blocks beside the committed count, marked: they count once their block commits. */
function runningReps(uncommitted: number): Html {
  return uncommitted > 0
    ? html` <span class="uncommitted muted" title="reps done in running blocks: counted when their block commits">+${uncommitted} running</span>`
    : html``;
}

function outcomeCells(o: ExperimentOutcome | null): Html {
  const { change, ci } = formatChange(o);
  const cls =
    o?.outcome === 'slower' || o?.outcome === 'invalid' || o?.outcome === 'failed'
      ? 'bad'
      : o?.outcome === 'faster'
        ? 'ok'
        : '';
  return html`<td class="verdict ${cls}">${o?.outcome ?? '–'}</td><td class="num">${change}</td><td class="num">${ci}</td><td class="num">${formatDuration(o?.duration_ms)}</td>`;
}

/** The live part: counts, the table of one page, the page links. */
export async function renderExperimentList(ctx: DashboardContext, q: ListQuery): Promise<Html> {
  const problems = [filterProblem('state', q.state), filterProblem('verdict', q.verdict)].filter((p) => p !== null);
  if (problems.length > 0)
    return html`<p class="bad" id="filter-problem">No list: ${problems.join('; ')}. Pick one from the form's lists.</p>`;
  const f: ExperimentFilter = {
    ...(q.state ? { state: q.state as ExperimentState } : {}),
    ...(q.verdict ? { outcome: q.verdict as Outcome } : {}),
    ...(q.name ? { name: q.name } : {}),
  };
  return fromRedis(ctx, async () => {
    const store = new ExperimentStore(ctx.redis, ctx.prefix);
    const ids = (await store.list()).reverse();
    // every experiment's state in one script: the counts, and the state filter without a record read
    const states = await store.states(ids);
    const counts = new Map<string, number>();
    for (const s of states) if (s) counts.set(s, (counts.get(s) ?? 0) + 1);
    const page = Math.max(0, Math.floor(Number(q.page ?? 0)) || 0);
    const also =
      q.hash || q.host
        ? async (e: ExperimentRecord) =>
            (!q.hash || e.hash.startsWith(q.hash)) && (!q.host || (await hostsOf(store, e.id)).includes(q.host))
        : undefined;
    const candidates = ids.filter((_, i) => states[i] !== null && (!f.state || states[i] === f.state));
    const { exps, more } = await selectExperiments(ctx.redis, ctx.prefix, candidates, f, {
      skip: page * PAGE_ROWS,
      limit: PAGE_ROWS,
      ...(also ? { also } : {}),
    });
    const outcomes = await experimentOutcomes(ctx.redis, ctx.prefix, exps);
    const rows: Row[] = await Promise.all(
      exps.map(async (exp, i) => ({
        exp,
        outcome: outcomes[i]!,
        hosts: await hostsOf(store, exp.id),
        measured: await ctx.redis.hlen(store.keys.results(exp.id)),
        // only a running experiment has running blocks: the other rows read no block states
        uncommitted: exp.state === 'running' ? await uncommittedRepsOf(ctx.redis, ctx.prefix, exp) : 0,
      })),
    );
    const link = (p: number) => `/experiments?${listQueryString({ ...q, page: String(p) })}`;
    return html`<p id="counts">${ids.length} experiments: ${[...counts].map(([s, n]) => `${s} ${n}`).join(', ') || 'none'}</p>
<table id="experiments"><tr><th>experiment</th><th>name</th><th>state</th><th>reps</th><th>verdict</th><th>change</th><th>CI</th><th>duration</th><th>spec hash</th><th>hosts</th><th>submitted</th><th>priority</th></tr>
${rows.length === 0 ? html`<tr><td colspan="12" class="muted">no experiment matches</td></tr>` : ''}
${rows.map(({ exp, outcome, hosts, measured, uncommitted }) => html`<tr data-experiment="${exp.id}"><td><a href="/experiments/${encodeURIComponent(exp.id)}">${exp.id}</a></td><td>${exp.name}</td><td class="state">${exp.state}</td><td class="num reps">${measured}/${plannedReps(exp.plan)}${runningReps(uncommitted)}</td>${outcomeCells(outcome)}<td><code>${exp.hash.slice(0, 12)}</code></td><td>${hosts.join(', ')}</td><td>${ago(exp.created)}</td><td>${exp.priority}</td></tr>`)}
</table>
<p id="pages">${page > 0 ? html`<a href="${link(page - 1)}" rel="prev">newer</a> ` : ''}page ${page + 1}${more ? html` <a href="${link(page + 1)}" rel="next">older</a>` : ''}</p>`;
  });
}

function filterForm(q: ListQuery): Html {
  const select = (name: string, values: readonly string[], chosen: string | undefined) =>
    html`<select name="${name}"><option value="">any</option>${values.map((v) => html`<option${v === chosen ? raw(' selected') : ''}>${v}</option>`)}</select>`;
  return html`<form method="get" action="/experiments" id="filter">
<label>state ${select('state', EXPERIMENT_STATES, q.state)}</label> <label>verdict ${select('verdict', OUTCOMES, q.verdict)}</label>
<label>name <input name="name" value="${q.name ?? ''}"></label> <label>spec hash <input name="hash" value="${q.hash ?? ''}" size="12"></label>
<label>host <input name="host" value="${q.host ?? ''}" size="10"></label> <button type="submit">Filter</button></form>`;
}

export function registerExperimentListPage(app: FastifyInstance, ctx: DashboardContext): void {
  app.get<{ Querystring: ListQuery }>('/experiments', (req, reply) => {
    const qs = listQueryString(req.query);
    return sendPage(
      ctx,
      reply,
      { title: 'Experiments', nav: 'experiments', live: `/live?view=experiments${qs ? `&${qs}` : ''}` },
      async () => html`${filterForm(req.query)}
<div data-live>${await renderExperimentList(ctx, req.query)}</div>`,
    );
  });
}
