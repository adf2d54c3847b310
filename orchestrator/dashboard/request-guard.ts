/**
 * The checks every request passes before a route runs, in this order:
 *   1. Host names this dashboard (allowed-hosts.ts), else 421: DNS rebinding ends here.
 *   2. A state-changing method (anything but GET, HEAD, OPTIONS) comes from the dashboard's own
 *      origin: Origin, else Sec-Fetch-Site, must say so, else 403. Cookies ignore ports, so a page
 *      on another loopback port would otherwise act with the dashboard's cookie.
 *   3. The token (auth.ts), on every route but /healthz and /login, else 401; `?token=` on a GET
 *      sets the session cookie and redirects to the same URL without it (so it leaves the
 *      address bar and the history); an action signed in by cookie also carries the CSRF field.
 * With --open-loopback (no token) 1 and 2 still hold; the write routes refuse (auth.ts refuse).
 * Every response, refusals and 404s included, forbids framing (`frame-ancestors 'none'` and
 * `X-Frame-Options: DENY`): a page of another local origin that framed the dashboard could lay
 * its own over the cancel button (clickjacking); a route's own CSP keeps its rules and gains it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AllowedHosts } from './allowed-hosts.ts';
import { checkCredential, csrfMatches, presented, refuse, sessionCookie } from './auth.ts';
import type { DashboardContext } from './dashboard-context.ts';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Routes open without the token: liveness (no cluster data) and the sign-in form. */
const OPEN_ROUTES = new Set(['/healthz', '/login']);

/** Why an unsafe request is not from this dashboard's origin, or null when it is (or cannot tell). */
function crossOrigin(req: FastifyRequest): string | null {
  const host = (req.headers.host ?? '').toLowerCase();
  const origin = req.headers.origin;
  if (origin !== undefined) {
    const o = origin.toLowerCase();
    return o === `http://${host}` || o === `https://${host}` ? null : `Origin ${origin}`;
  }
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin' ? null : `Sec-Fetch-Site ${String(site)}`;
  return null;
}

function forbid(
  ctx: DashboardContext,
  req: FastifyRequest,
  reply: FastifyReply,
  why: string,
  text: string,
): FastifyReply {
  ctx.log.warn(
    { ip: req.ip, method: req.method, route: req.routeOptions.url ?? 'unknown', why },
    'dashboard request refused with 403',
  );
  return reply.code(403).type('text/plain').send(text);
}

/** The request's URL without its `token` parameter. */
function withoutToken(url: string): string {
  const u = new URL(url, 'http://dashboard.invalid');
  u.searchParams.delete('token');
  return `${u.pathname}${u.search}`;
}

const NO_FRAMING = "frame-ancestors 'none'";

/** `csp` with framing forbidden: a route's own policy keeps every rule and gains frame-ancestors 'none'. */
export function withoutFraming(csp: unknown): string {
  const own =
    typeof csp === 'string'
      ? csp
          .split(';')
          .map((d) => d.trim())
          .filter((d) => d !== '' && !/^frame-ancestors(\s|$)/i.test(d))
      : [];
  return [...own, NO_FRAMING].join('; ');
}

export function registerRequestGuard(app: FastifyInstance, ctx: DashboardContext, hosts: AllowedHosts): void {
  // On the raw response first, for the answers written past fastify (the live feed, sse-channel.ts);
  // then on fastify's own headers, merged with a route's policy.
  app.addHook('onRequest', async (_req, reply) => {
    reply.raw.setHeader('content-security-policy', NO_FRAMING);
    reply.raw.setHeader('x-frame-options', 'DENY');
  });
  app.addHook('onSend', async (_req, reply, payload) => {
    reply
      .header('content-security-policy', withoutFraming(reply.getHeader('content-security-policy')))
      .header('x-frame-options', 'DENY');
    return payload;
  });

  app.addHook('onRequest', async (req, reply) => {
    if (!hosts.allows(req.headers.host)) {
      ctx.log.warn({ ip: req.ip, method: req.method }, 'dashboard request for another host name refused with 421');
      return reply
        .code(421)
        .header('connection', 'close')
        .type('text/plain')
        .send(
          `This dashboard does not answer to the host name ${JSON.stringify(req.headers.host ?? '')}: it answers to ${hosts.describe()}. A page that reaches it under another name may be DNS rebinding; open it by one of those names, or start it with --allow-host NAME.\n`,
        );
    }
    if (SAFE_METHODS.has(req.method)) return;
    const cross = crossOrigin(req);
    if (cross !== null) {
      return forbid(
        ctx,
        req,
        reply,
        cross,
        `Refused: a ${req.method} from another origin (${cross}; this dashboard is http://${req.headers.host}). Only the dashboard's own pages take its actions.\n`,
      );
    }
  });

  app.addHook('preHandler', async (req, reply) => {
    if (ctx.token === null || OPEN_ROUTES.has(req.routeOptions.url ?? '')) return;
    const query = SAFE_METHODS.has(req.method)
      ? new URL(req.url, 'http://dashboard.invalid').searchParams.get('token')
      : null;
    const given = presented(req, query);
    const outcome = checkCredential(ctx, given);
    if (outcome !== 'ok') return refuse(ctx, req, reply, outcome);
    if (given!.via === 'query')
      return reply.header('set-cookie', sessionCookie(ctx.token)).redirect(withoutToken(req.url), 303);
    if (given!.via === 'cookie' && !SAFE_METHODS.has(req.method) && !csrfMatches(ctx, req)) {
      return forbid(
        ctx,
        req,
        reply,
        'no CSRF field',
        `Refused: a ${req.method} signed in by cookie without the page's CSRF field. Use the dashboard's own form, or send Authorization: Bearer TOKEN.\n`,
      );
    }
  });
}
