/**
 * The dashboard's HTTP server (fastify): the pages (one file per page), the live feeds, the
 * results files, bull-board and /metrics, over one Redis connection. Used by `orch dashboard`
 * and by `orch serve --http PORT`.
 */
import Fastify from 'fastify';
import type { Logger } from 'pino';
import { connectRedis, waitReady } from '../../store/connect.ts';
import { checkToken, isLoopback, refuse, requireTokenFor, TOKEN_COOKIE } from './auth.ts';
import { registerBullBoard } from './bull-board.ts';
import { registerClusterPage } from './cluster-page.ts';
import type { DashboardContext } from './dashboard-context.ts';
import { registerExperimentPages } from './experiments-page.ts';
import { html } from './html.ts';
import { renderPage } from './layout.ts';
import { registerLiveEvents } from './live-events.ts';
import { DashboardMetrics } from './metrics.ts';
import { registerNightlyPage } from './nightly-page.ts';
import { registerQueuePage } from './queue-page.ts';
import { registerResultFiles } from './results-files.ts';

export interface DashboardOptions {
  url: string;
  prefix: string;
  host: string;
  port: number;
  token: string | null;
  resultsRoot: string;
  log: Logger;
}

export interface Dashboard {
  /** http://host:port */
  address: string;
  close(): Promise<void>;
}

export async function startDashboard(opts: DashboardOptions): Promise<Dashboard> {
  requireTokenFor(opts.host, opts.token);
  // Not waited for: the dashboard starts with Redis down and shows that state until it answers.
  const redis = connectRedis(opts.url, { log: opts.log, name: 'orch-dashboard', maxBackoffMs: 1000 });
  let waited: NodeJS.Timeout | undefined;
  await Promise.race([waitReady(redis).catch(() => {}), new Promise((r) => (waited = setTimeout(r, 3000)))]);
  clearTimeout(waited);
  const ctx: DashboardContext = { redis, url: opts.url, prefix: opts.prefix, resultsRoot: opts.resultsRoot, token: opts.token, loopback: isLoopback(opts.host), log: opts.log };
  // fastify's own request log would carry URLs and headers: orch logs what it decides instead
  const app = Fastify({ logger: false, forceCloseConnections: true });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });

  // Beyond loopback every route needs the token; /login turns a token into a cookie for a browser.
  app.addHook('onRequest', async (req, reply) => {
    if (ctx.loopback || req.url.startsWith('/login')) return;
    const auth = checkToken(ctx, req);
    if (auth !== 'ok') return refuse(ctx, req, reply, auth);
  });
  app.get('/login', (_req, reply) =>
    reply.type('text/html; charset=utf-8').send(`<!doctype html><title>orch dashboard</title><form method="post" action="/login"><input type="password" name="token" placeholder="dashboard token" autofocus> <button>Open</button></form>`),
  );
  app.post('/login', (req, reply) => {
    const auth = checkToken(ctx, req);
    if (auth !== 'ok') return refuse(ctx, req, reply, auth);
    const token = (req.body as { token: string }).token;
    return reply.header('set-cookie', `${TOKEN_COOKIE}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/`).redirect('/', 303);
  });

  registerClusterPage(app, ctx);
  registerQueuePage(app, ctx);
  registerExperimentPages(app, ctx);
  registerNightlyPage(app, ctx);
  registerResultFiles(app, ctx);
  registerLiveEvents(app, ctx);
  const board = await registerBullBoard(app, ctx);
  const refreshBoard = setInterval(() => void board.refresh(), 10_000);

  const metrics = new DashboardMetrics(ctx);
  app.get('/metrics', async (_req, reply) => {
    await metrics.refresh();
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  app.get('/healthz', (_req, reply) => reply.send({ redis: redis.status === 'ready' ? 'up' : 'down' }));

  app.setNotFoundHandler((req, reply) =>
    reply.code(404).type('text/html; charset=utf-8').send(renderPage({ title: 'Not found', nav: 'cluster', redis: redis.status === 'ready' ? 'up' : 'down', body: html`<p class="bad">Nothing at ${req.url}.</p>` })),
  );
  app.setErrorHandler((err, req, reply) => {
    opts.log.error({ err: (err as Error).message, route: req.routeOptions.url }, 'dashboard route failed');
    return reply.code(500).type('text/plain').send(`The dashboard failed on this page: ${(err as Error).message}\n`);
  });

  await app.listen({ host: opts.host, port: opts.port });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : opts.port;
  const shown = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  return {
    address: `http://${shown}:${port}`,
    close: async () => {
      clearInterval(refreshBoard);
      await app.close();
      await board.close();
      redis.disconnect();
    },
  };
}
