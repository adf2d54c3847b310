/**
 * Renders a page route: the page's own data read from Redis, or — when Redis does not answer —
 * the same frame with the "Redis unreachable" banner and a 503, so every page shows that state
 * and reloads itself when Redis returns.
 */
import type { FastifyReply } from 'fastify';
import { type DashboardContext, RedisDownError, redisUp } from './dashboard-context.ts';
import { type Html, html } from './html.ts';
import { type PageOptions, renderPage } from './layout.ts';

/** A page that does not exist (an unknown experiment): a 404 page saying which and why. */
export class NotFound extends Error {}

export async function sendPage(
  ctx: DashboardContext,
  reply: FastifyReply,
  page: Omit<PageOptions, 'body' | 'redis'>,
  body: () => Promise<Html>,
): Promise<FastifyReply> {
  try {
    if (!redisUp(ctx)) throw new RedisDownError(ctx.url, `connection ${ctx.redis.status}`);
    const b = await body();
    return reply.type('text/html; charset=utf-8').send(renderPage({ ...page, body: b, redis: 'up' }));
  } catch (err) {
    if (err instanceof NotFound) {
      return reply
        .code(404)
        .type('text/html; charset=utf-8')
        .send(renderPage({ ...page, title: 'Not found', body: html`<p class="bad">${err.message}</p>`, redis: 'up' }));
    }
    if (err instanceof RedisDownError) {
      return reply
        .code(503)
        .type('text/html; charset=utf-8')
        .send(renderPage({ ...page, body: html``, redis: 'down', redisProblem: err.message }));
    }
    throw err;
  }
}
