/**
 * Who may read and who may act. Bound to loopback, pages are open and the one write action
 * (cancel) needs the token; bound to any other address, every route needs it, and the server
 * refuses to start without one. The token is compared in constant time and never logged.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { UserInputError } from '../../jobs/errors.ts';
import type { DashboardContext } from './dashboard-context.ts';

export const TOKEN_COOKIE = 'orch_dashboard_token';

export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1' || host === '::ffff:127.0.0.1';
}

/** The token from ORCH_DASHBOARD_TOKEN, or from a file only its owner may read. */
export function readToken(opts: { tokenFile?: string | undefined; env?: NodeJS.ProcessEnv }): string | null {
  if (opts.tokenFile !== undefined) {
    let st;
    try {
      st = statSync(opts.tokenFile);
    } catch (err) {
      throw new UserInputError('DASHBOARD_TOKEN', `--token-file ${opts.tokenFile}: cannot read it (${(err as NodeJS.ErrnoException).code ?? err})`, {
        hint: 'pass the path of a file holding the token on its first line (umask 077; openssl rand -hex 24 > FILE)',
      });
    }
    if ((st.mode & 0o077) !== 0 || (process.getuid !== undefined && st.uid !== process.getuid())) {
      throw new UserInputError('DASHBOARD_TOKEN', `--token-file ${opts.tokenFile}: mode ${(st.mode & 0o777).toString(8)}: a token file must be yours and readable by you alone`, {
        hint: `chmod 600 ${opts.tokenFile}, then start the dashboard again`,
      });
    }
    const token = readFileSync(opts.tokenFile, 'utf8').split('\n')[0]?.trim() ?? '';
    if (token.length < 16) {
      throw new UserInputError('DASHBOARD_TOKEN', `--token-file ${opts.tokenFile}: the token on its first line is shorter than 16 characters`, { hint: 'write a longer one: openssl rand -hex 24' });
    }
    return token;
  }
  const env = (opts.env ?? process.env).ORCH_DASHBOARD_TOKEN?.trim();
  if (env && env.length < 16) {
    throw new UserInputError('DASHBOARD_TOKEN', 'ORCH_DASHBOARD_TOKEN is shorter than 16 characters', { hint: 'export a longer one: openssl rand -hex 24' });
  }
  return env || null;
}

/** Refuses to listen beyond loopback without a token. */
export function requireTokenFor(host: string, token: string | null): void {
  if (!isLoopback(host) && token === null) {
    throw new UserInputError('DASHBOARD_TOKEN', `orch dashboard --host ${host}: an address other than loopback needs a token, or anyone who reaches it reads the cluster`, {
      hint: 'export ORCH_DASHBOARD_TOKEN (openssl rand -hex 24) or pass --token-file FILE (mode 600), or bind to 127.0.0.1 and tunnel (ssh -L)',
    });
  }
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

function presented(req: FastifyRequest): string | null {
  const auth = req.headers.authorization;
  if (auth?.startsWith('Bearer ')) return auth.slice(7).trim();
  // the cancel form posts it as a field
  const body = req.body as { token?: unknown } | undefined;
  if (body && typeof body.token === 'string') return body.token;
  const cookie = req.headers.cookie
    ?.split(';')
    .map((c) => c.trim())
    .find((c) => c.startsWith(`${TOKEN_COOKIE}=`));
  return cookie ? decodeURIComponent(cookie.slice(TOKEN_COOKIE.length + 1)) : null;
}

export type AuthOutcome = 'ok' | 'missing' | 'wrong' | 'unconfigured';

export function checkToken(ctx: DashboardContext, req: FastifyRequest): AuthOutcome {
  const given = presented(req);
  if (ctx.token === null) return 'unconfigured';
  if (given === null || given === '') return 'missing';
  return timingSafeEqual(digest(given), digest(ctx.token)) ? 'ok' : 'wrong';
}

/** Answers a request that lacks the right token; logs who and where, never what was presented. */
export function refuse(ctx: DashboardContext, req: FastifyRequest, reply: FastifyReply, outcome: Exclude<AuthOutcome, 'ok'>): FastifyReply {
  if (outcome === 'unconfigured') {
    return reply.code(403).type('text/plain').send('This dashboard has no token, so it takes no write action. Start it with ORCH_DASHBOARD_TOKEN set (or --token-file FILE) to cancel from the page.\n');
  }
  ctx.log.warn({ ip: req.ip, method: req.method, route: req.routeOptions.url ?? 'unknown' }, `${outcome} dashboard token: refused with 401`);
  return reply
    .code(401)
    .header('www-authenticate', 'Bearer realm="orch dashboard"')
    .type('text/plain')
    .send(`${outcome === 'missing' ? 'This needs' : 'Wrong token: this needs'} the dashboard token (Authorization: Bearer TOKEN, or open /login).\n`);
}
