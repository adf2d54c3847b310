/**
 * Server-Sent Events for the pages' live parts (layout.ts has the client):
 *   /live?view=cluster|queue   the Redis state, and the view's fragment re-rendered each second
 *                              and sent when it changed (the same render function as the page)
 *   /live/experiments/:id      the Redis state, and the progress fragment on every new entry of
 *                              the experiment's event stream: XREAD BLOCK on a connection of its
 *                              own per client; `reload` once the experiment ended
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ExperimentStore, TERMINAL_EXPERIMENT_STATES } from '../../store/experiment-store.ts';
import { ProgressTracker } from '../experiment/progress.ts';
import { renderCluster } from './cluster-page.ts';
import { fromRedis, redisUp, type DashboardContext } from './dashboard-context.ts';
import { renderExperimentProgress } from './experiments-page.ts';
import type { Html } from './html.ts';
import { renderQueue } from './queue-page.ts';

const TICK_MS = 1000;

interface Channel {
  send(event: string, data: unknown): void;
  closed: Promise<void>;
  isClosed(): boolean;
}

function open(req: FastifyRequest, reply: FastifyReply): Channel {
  reply.hijack();
  reply.raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  let closed = false;
  const done = new Promise<void>((resolve) => req.raw.once('close', () => ((closed = true), resolve())));
  const keepAlive = setInterval(() => reply.raw.write(': keep-alive\n\n'), 15_000);
  void done.then(() => clearInterval(keepAlive));
  return {
    send: (event, data) => {
      if (!closed) reply.raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    },
    closed: done,
    isClosed: () => closed,
  };
}

/** Sends the Redis state at once and on every change, until the client leaves. */
function watchRedis(ctx: DashboardContext, ch: Channel): void {
  let last = '';
  const tick = () => {
    const state = redisUp(ctx) ? 'up' : 'down';
    if (state !== last) ch.send('redis', { state });
    last = state;
  };
  tick();
  const timer = setInterval(tick, 250);
  void ch.closed.then(() => clearInterval(timer));
}

const VIEWS: Record<string, (ctx: DashboardContext) => Promise<Html>> = { cluster: renderCluster, queue: renderQueue };

export function registerLiveEvents(app: FastifyInstance, ctx: DashboardContext): void {
  app.get<{ Querystring: { view?: string } }>('/live', async (req, reply) => {
    const ch = open(req, reply);
    watchRedis(ctx, ch);
    const render = VIEWS[req.query.view ?? ''];
    if (!render) return;
    let last = '';
    while (!ch.isClosed()) {
      if (redisUp(ctx)) {
        const fragment = await render(ctx).then((h) => h.text, () => null);
        if (fragment !== null && fragment !== last) ch.send('fragment', { html: fragment });
        if (fragment !== null) last = fragment;
      }
      await Promise.race([new Promise((r) => setTimeout(r, TICK_MS)), ch.closed]);
    }
  });

  app.get<{ Params: { id: string } }>('/live/experiments/:id', async (req, reply) => {
    const ch = open(req, reply);
    watchRedis(ctx, ch);
    const store = new ExperimentStore(ctx.redis, ctx.prefix);
    const exp = await fromRedis(ctx, () => store.get(req.params.id)).catch(() => null);
    if (!exp) return;
    // XREAD BLOCK holds its connection: one of its own, closed when the client leaves
    const conn = ctx.redis.duplicate();
    conn.on('error', () => {});
    void ch.closed.then(() => conn.disconnect());
    const tracker = new ProgressTracker(conn, ctx.prefix, exp);
    let last = '';
    let first = true;
    try {
      while (!ch.isClosed()) {
        if (!redisUp(ctx) || conn.status !== 'ready') {
          await Promise.race([new Promise((r) => setTimeout(r, TICK_MS)), ch.closed]);
          continue;
        }
        await tracker.poll(TICK_MS);
        const p = await tracker.snapshot();
        const fragment = renderExperimentProgress(p).text;
        if (fragment !== last) ch.send('fragment', { html: fragment });
        last = fragment;
        if (TERMINAL_EXPERIMENT_STATES.has(p.state)) {
          // ended while this page watched: reload for the tables and plots (not when it had ended already)
          if (!first) ch.send('reload', { state: p.state });
          break;
        }
        first = false;
      }
    } catch (err) {
      if (!ch.isClosed()) ctx.log.warn({ err: (err as Error).message, experiment: exp.id }, 'live feed stopped');
    } finally {
      conn.disconnect();
      reply.raw.end();
    }
  });
}
