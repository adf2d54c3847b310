/**
 * `/queue`: the experiments not yet ended in the scheduler's queue order (priority, then
 * submission): waiting blocks with the scheduler's reason and an estimated start, running blocks
 * with their reps done; cancel behind the token (orchestrator/experiment/cancel.ts).
 */
import type { FastifyInstance } from 'fastify';
import { OrchError } from '../../jobs/errors.ts';
import { type BlockState, type ExperimentRecord, ExperimentStore } from '../../store/experiment-store.ts';
import { cancelExperiment } from '../experiment/cancel.ts';
import { formatDuration } from '../experiment/eta.ts';
import { type Progress, ProgressTracker } from '../experiment/progress.ts';
import { compareQueued } from '../scheduler/grant-planner.ts';
import { CSRF_FIELD, refuse } from './auth.ts';
import { type DashboardContext, fromRedis } from './dashboard-context.ts';
import { ago, type Html, html } from './html.ts';
import { sendPage } from './send-page.ts';

/** Reps done per block of the current attempt, from the whole stream read once. */
export async function readProgress(ctx: DashboardContext, exp: ExperimentRecord): Promise<Progress> {
  const tracker = new ProgressTracker(ctx.redis, ctx.prefix, exp);
  // no BLOCK: a page reads what is there; the page's live feed waits on its own connection
  while ((await tracker.poll(null)).length > 0);
  return tracker.snapshot();
}

/**
 * The cancel button: posts the page's CSRF field, the browser adds the session cookie
 * (request-guard.ts checks both, and the origin). Without a token the dashboard takes no action.
 */
export function cancelForm(ctx: DashboardContext, id: string): Html {
  if (ctx.csrf === null) return html`<span class="muted">(cancel: this dashboard has no token)</span>`;
  return html`<form class="inline cancel" method="post" action="/experiments/${encodeURIComponent(id)}/cancel"><input type="hidden" name="${CSRF_FIELD}" value="${ctx.csrf}"> <button type="submit">Cancel</button></form>`;
}

export function progressBar(done: number, planned: number): Html {
  const share = planned === 0 ? 0 : done / planned;
  return html`<span class="bar" title="${done}/${planned}"><span style="width:${(share * 100).toFixed(0)}%"></span></span> <span class="reps">${done}/${planned}</span>`;
}

interface Queued {
  exp: ExperimentRecord;
  blocks: BlockState[];
  progress: Progress;
}

/**
 * Estimated start of each waiting block: every running block frees its gang once its reps left
 * are done (progress.ts: measured rep times, else the step history); waiting blocks, in queue
 * order, take the earliest free gang (an estimate: gangs differ in size). A block behind one
 * whose time is unknown starts at an unknown time (Infinity), not at a guess.
 */
function estimateStarts(queued: Queued[], now: number): Map<string, number> {
  const free: number[] = [];
  const etaOf = (q: Queued, block: number) => q.progress.blocks.find((x) => x.block === block)?.eta ?? null;
  for (const q of queued)
    for (const b of q.blocks)
      if (b.phase === 'running') free.push(now + (etaOf(q, b.block)?.ms ?? Number.POSITIVE_INFINITY));
  if (free.length === 0) free.push(now);
  const waiting = queued
    .flatMap((q) =>
      q.blocks
        .filter((b) => b.phase === 'waiting')
        .map((b) => ({ q, b, priority: q.exp.priority, seq: q.exp.seq, block: b.block })),
    )
    .sort(compareQueued);
  const out = new Map<string, number>();
  for (const w of waiting) {
    free.sort((a, b) => a - b);
    const start = free.shift()!;
    out.set(`${w.q.exp.id}/${w.b.block}`, start);
    free.push(start + (etaOf(w.q, w.b.block)?.ms ?? Number.POSITIVE_INFINITY));
  }
  return out;
}

function startText(start: number | undefined, now: number): string {
  if (start === undefined || start === Number.POSITIVE_INFINITY)
    return 'unknown (no rep of the blocks ahead measured yet)';
  return start <= now ? 'now' : `in ~${formatDuration(start - now)}`;
}

/** How many experiments of the queue's head the page shows (estimated starts are for these). */
const QUEUE_PAGE = 50;

/**
 * The head of the queue in the scheduler's order (priority, then submission), read cheaply: the
 * active experiments' priorities in one pipeline, then only the page's records. With 10 000
 * queued, reading every record, its blocks and its stream per request took the page past its
 * timeout ("Redis unreachable" while Redis was fine).
 */
async function queueHead(store: ExperimentStore, limit: number): Promise<{ ids: string[]; total: number }> {
  const scored = await store.redis.zrange(store.sched.active, '0', '-1', 'WITHSCORES');
  const active: { id: string; seq: number; priority: number }[] = [];
  for (let i = 0; i < scored.length; i += 2) active.push({ id: scored[i]!, seq: Number(scored[i + 1]), priority: 0 });
  const p = store.redis.pipeline();
  for (const a of active) p.hget(store.keys.exp(a.id), 'priority');
  const replies = (await p.exec()) ?? [];
  for (const [i, a] of active.entries()) a.priority = Number(replies[i]?.[1] ?? 0) || 0;
  const live = active.filter((_, i) => replies[i]?.[1] !== null);
  live.sort((a, b) => compareQueued({ ...a, block: 0 }, { ...b, block: 0 }));
  return { ids: live.slice(0, limit).map((a) => a.id), total: live.length };
}

export async function renderQueue(ctx: DashboardContext): Promise<Html> {
  return fromRedis(ctx, async () => {
    const store = new ExperimentStore(ctx.redis, ctx.prefix);
    const head = await queueHead(store, QUEUE_PAGE);
    const read = await Promise.all(
      head.ids.map(async (id): Promise<Queued | null> => {
        const exp = await store.get(id);
        if (!exp) return null;
        return { exp, blocks: await store.blocks(id), progress: await readProgress(ctx, exp) };
      }),
    );
    const queued = read.filter((q): q is Queued => q !== null);
    const now = Date.now();
    const starts = estimateStarts(queued, now);
    if (queued.length === 0)
      return html`<p class="muted" id="queue-empty">The queue is empty: no experiment is waiting or running.</p>`;
    const rest = head.total - queued.length;
    return html`<p id="queue-count">${head.total} in the queue${rest > 0 ? `, the first ${queued.length} shown (${rest} more behind them; orch status --limit N lists them)` : ''}</p>${queued.map(
      ({ exp, blocks, progress }) => html`<section class="queued" data-experiment="${exp.id}">
<h2><a href="/experiments/${encodeURIComponent(exp.id)}">${exp.id}</a> <span class="muted">${exp.state}, priority ${exp.priority}, submitted ${ago(exp.created, now)}</span></h2>
${cancelForm(ctx, exp.id)}
<table><tr><th>block</th><th>phase</th><th>progress</th><th>detail</th></tr>
${blocks.map((b) => {
  const p = progress.blocks.find((x) => x.block === b.block);
  const start = starts.get(`${exp.id}/${b.block}`);
  const detail =
    b.phase === 'waiting'
      ? html`${b.why ?? 'queued (no grant pass yet: is orch serve running?)'}; estimated start ${startText(start, now)}`
      : b.phase === 'running'
        ? html`attempt ${b.attempt} on ${b.gang.flatMap((g) => g.cards).join(', ')} since ${ago(b.granted_at, now)}${p?.latest ? html`; last rep ${p.latest.arm} ${p.latest.median_ms?.toFixed(3) ?? '–'} ms/step` : ''}`
        : html`${b.reason ?? ''}`;
  return html`<tr data-block="${b.block}"><td>${b.block}</td><td>${b.phase}</td><td>${progressBar(p?.done ?? 0, p?.planned ?? 0)}</td><td>${detail}</td></tr>`;
})}</table></section>`,
    )}`;
  });
}

export function registerQueuePage(app: FastifyInstance, ctx: DashboardContext): void {
  app.get('/queue', (_req, reply) =>
    sendPage(
      ctx,
      reply,
      { title: 'Queue', nav: 'queue', live: '/live?view=queue' },
      async () => html`<div data-live>${await renderQueue(ctx)}</div>`,
    ),
  );

  // The one write action: the request guard checked its origin, token and CSRF field.
  app.post<{ Params: { id: string } }>('/experiments/:id/cancel', async (req, reply) => {
    if (ctx.token === null) return refuse(ctx, req, reply, 'unconfigured');
    try {
      const r = await fromRedis(ctx, () =>
        cancelExperiment(ctx.redis, ctx.prefix, req.params.id, 'cancelled from the dashboard'),
      );
      ctx.log.info({ experiment: r.id, state: r.state, notified: r.notified }, 'cancel requested from the dashboard');
      return req.headers.accept?.includes('application/json')
        ? reply.send(r)
        : reply.redirect(`/experiments/${encodeURIComponent(r.id)}`, 303);
    } catch (err) {
      if (err instanceof OrchError && err.code === 'NO_SUCH_EXPERIMENT')
        return reply.code(404).type('text/plain').send(`${err.message}\n`);
      throw err;
    }
  });
}
