/**
 * The dashboard's HTTP server (fastify): the pages (one file per page), the live feeds, the
 * results files, bull-board and /metrics, over one Redis connection (and one more for the live
 * feeds' blocking stream reads), every request through the request guard first. Used by
 * `orch dashboard` and by `orch serve --http PORT`.
 */
import Fastify from 'fastify';
import type { Logger } from 'pino';
import { messageOf } from '../../jobs/message-of.ts';
import { connectRedis, waitReady } from '../../store/connect.ts';
import { AllowedHosts } from './allowed-hosts.ts';
import { checkCredential, csrfValue, presented, refuse, requireTokenFor, sessionCookie } from './auth.ts';
import { registerBullBoard } from './bull-board.ts';
import { registerClusterPage } from './cluster-page.ts';
import type { DashboardContext } from './dashboard-context.ts';
import { registerExperimentListPage } from './experiments-list-page.ts';
import { registerExperimentPages } from './experiments-page.ts';
import { html } from './html.ts';
import { renderPage } from './layout.ts';
import { type LiveEvents, registerLiveEvents } from './live-events.ts';
import { DashboardMetrics } from './metrics.ts';
import { registerNightlyPage } from './nightly-page.ts';
import { registerQueuePage } from './queue-page.ts';
import { registerRequestGuard } from './request-guard.ts';
import { registerResultFiles } from './results-files.ts';
import { DEFAULT_SSE_LIMITS, type SseLimits } from './sse-admission.ts';

/** The largest request body read (the forms post a field or two). */
const BODY_LIMIT_BYTES = 16 * 1024;
/** A request must arrive whole within this (a slow sender holds no socket for minutes). */
const REQUEST_TIMEOUT_MS = 15_000;

export interface DashboardOptions {
  url: string;
  prefix: string;
  host: string;
  port: number;
  /** null only with openLoopback on a loopback address */
  token: string | null;
  /** serve loopback without a token (and take no write action) */
  openLoopback?: boolean;
  /** names besides the bound address that browsers use for it (allowed-hosts.ts) */
  allowHosts?: string[];
  /** default DEFAULT_SSE_LIMITS */
  sse?: SseLimits;
  resultsRoot: string;
  log: Logger;
}

export interface Dashboard {
  /** http://host:port */
  address: string;
  /** the live feeds, for tests and /healthz */
  live: LiveEvents;
  close(): Promise<void>;
}

export async function startDashboard(opts: DashboardOptions): Promise<Dashboard> {
  requireTokenFor(opts.host, opts.token, opts.openLoopback ?? false);
  const hosts = new AllowedHosts(opts.host, opts.allowHosts);
  // Not waited for: the dashboard starts with Redis down and shows that state until it answers.
  const redis = connectRedis(opts.url, { log: opts.log, name: 'orch-dashboard', maxBackoffMs: 1000 });
  let waited: NodeJS.Timeout | undefined;
  await Promise.race([waitReady(redis).catch(() => {}), new Promise((r) => (waited = setTimeout(r, 3000)))]);
  clearTimeout(waited);
  const ctx: DashboardContext = {
    redis,
    url: opts.url,
    prefix: opts.prefix,
    resultsRoot: opts.resultsRoot,
    token: opts.token,
    csrf: opts.token === null ? null : csrfValue(opts.token),
    log: opts.log,
  };
  // fastify's own request log would carry URLs and headers: orch logs what it decides instead
  const app = Fastify({
    logger: false,
    forceCloseConnections: true,
    bodyLimit: BODY_LIMIT_BYTES,
    requestTimeout: REQUEST_TIMEOUT_MS,
  });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });
  // before every route, bull-board's included: host, origin, token
  registerRequestGuard(app, ctx, hosts);

  app.get('/login', (_req, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .send(
        `<!doctype html><title>orch dashboard</title><form method="post" action="/login"><input type="password" name="token" placeholder="dashboard token" autofocus> <button>Open</button></form>`,
      ),
  );
  app.post('/login', (req, reply) => {
    const outcome = checkCredential(ctx, presented(req, null));
    if (outcome !== 'ok') return refuse(ctx, req, reply, outcome);
    return reply.header('set-cookie', sessionCookie(ctx.token!)).redirect('/', 303);
  });

  registerClusterPage(app, ctx);
  registerQueuePage(app, ctx);
  registerExperimentListPage(app, ctx);
  registerExperimentPages(app, ctx);
  registerNightlyPage(app, ctx);
  registerResultFiles(app, ctx);
  const live = registerLiveEvents(app, ctx, opts.sse ?? DEFAULT_SSE_LIMITS);
  const board = await registerBullBoard(app, ctx);
  const refreshBoard = setInterval(() => void board.refresh(), 10_000);

  const metrics = new DashboardMetrics(ctx);
  app.get('/metrics', async (_req, reply) => {
    await metrics.refresh();
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  app.get('/healthz', (_req, reply) =>
    reply.send({ redis: redis.status === 'ready' ? 'up' : 'down', live_feeds: live.admission.total }),
  );

  app.setNotFoundHandler((req, reply) =>
    reply
      .code(404)
      .type('text/html; charset=utf-8')
      .send(
        renderPage({
          title: 'Not found',
          nav: 'cluster',
          redis: redis.status === 'ready' ? 'up' : 'down',
          body: html`<p class="bad">Nothing at ${req.url.split('?')[0]}.</p>`,
        }),
      ),
  );
  app.setErrorHandler((err, req, reply) => {
    opts.log.error({ err: messageOf(err), route: req.routeOptions.url }, 'dashboard route failed');
    return reply
      .code(500)
      .type('text/plain')
      .send(`The dashboard failed on this page: ${messageOf(err)}\n`);
  });

  await app.listen({ host: opts.host, port: opts.port });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : opts.port;
  hosts.listening(port);
  const shown = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  return {
    address: `http://${shown}:${port}`,
    live,
    close: async () => {
      clearInterval(refreshBoard);
      await live.close();
      await app.close();
      await board.close();
      redis.disconnect();
    },
  };
}
