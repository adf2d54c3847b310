/**
 * Who may read and who may act. Every route but /healthz and /login needs the token, on loopback
 * too: any local user (and any page a browser opens, through DNS rebinding) reaches a loopback
 * port. Only `--open-loopback` serves loopback without one, and then takes no write action.
 *
 * A client presents the token as `Authorization: Bearer TOKEN` (scripts, Prometheus) or, in a
 * browser, once as `?token=` (the URL orch prints at start) or through the /login form, which set
 * the session cookie. The cookie carries a value derived from the token, never the token itself;
 * an action taken with the cookie also carries the page's CSRF field, derived the same way. Both
 * are compared in constant time; nothing presented is ever logged.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync, type Stats, statSync } from 'node:fs';
import { isIP } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { UserInputError } from '../../jobs/errors.ts';
import type { DashboardContext } from './dashboard-context.ts';

const SESSION_COOKIE = 'orch_dashboard_session';
/** The form field (or `x-csrf-token` header) an action taken with the cookie carries. */
export const CSRF_FIELD = 'csrf';
/** The shortest token accepted: shorter ones can be guessed. */
export const MIN_TOKEN_LENGTH = 16;

export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1' || host === '::ffff:127.0.0.1';
}

/** The token from ORCH_DASHBOARD_TOKEN, or from a file only its owner may read. */
export function readToken(opts: { tokenFile?: string | undefined; env?: NodeJS.ProcessEnv }): string | null {
  if (opts.tokenFile !== undefined) return readTokenFile(opts.tokenFile, '--token-file');
  const env = (opts.env ?? process.env).ORCH_DASHBOARD_TOKEN?.trim();
  if (env && env.length < MIN_TOKEN_LENGTH) {
    throw new UserInputError('DASHBOARD_TOKEN', `ORCH_DASHBOARD_TOKEN is shorter than ${MIN_TOKEN_LENGTH} characters`, {
      hint: 'export a longer one: openssl rand -hex 24',
    });
  }
  return env || null;
}

/** The token on the first line of `file`, which must be this user's and readable by no one else. */
export function readTokenFile(file: string, what: string): string {
  let st: Stats;
  try {
    st = statSync(file);
  } catch (err) {
    throw new UserInputError(
      'DASHBOARD_TOKEN',
      `${what} ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? err})`,
      {
        hint: 'pass the path of a file holding the token on its first line (umask 077; openssl rand -hex 24 > FILE)',
      },
    );
  }
  if ((st.mode & 0o077) !== 0 || (process.getuid !== undefined && st.uid !== process.getuid())) {
    throw new UserInputError(
      'DASHBOARD_TOKEN',
      `${what} ${file}: mode ${(st.mode & 0o777).toString(8)}: a token file must be yours and readable by you alone`,
      {
        hint: `chmod 600 ${file}, then start the dashboard again`,
      },
    );
  }
  const token = readFileSync(file, 'utf8').split('\n')[0]?.trim() ?? '';
  if (token.length < MIN_TOKEN_LENGTH) {
    throw new UserInputError(
      'DASHBOARD_TOKEN',
      `${what} ${file}: the token on its first line is shorter than ${MIN_TOKEN_LENGTH} characters`,
      { hint: 'write a longer one: openssl rand -hex 24' },
    );
  }
  return token;
}

/** Refuses to start without a token, except on loopback when the user asked for an open one. */
export function requireTokenFor(host: string, token: string | null, openLoopback: boolean): void {
  if (token !== null) return;
  if (!isLoopback(host)) {
    throw new UserInputError(
      'DASHBOARD_TOKEN',
      `orch dashboard --host ${host}: an address other than loopback needs a token, or anyone who reaches it reads the cluster`,
      {
        hint: 'export ORCH_DASHBOARD_TOKEN (openssl rand -hex 24) or pass --token-file FILE (mode 600), or bind to 127.0.0.1 and tunnel (ssh -L)',
      },
    );
  }
  if (!openLoopback) {
    throw new UserInputError(
      'DASHBOARD_TOKEN',
      `orch dashboard --host ${host}: no token, and --open-loopback was not given: every local user could read the cluster`,
      {
        hint: 'let orch dashboard make its token file (the default), export ORCH_DASHBOARD_TOKEN, or pass --open-loopback to serve loopback without one',
      },
    );
  }
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

function same(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

function derived(token: string, purpose: string): string {
  return createHmac('sha256', token).update(`orch-dashboard-${purpose}-v1`).digest('hex');
}

/** The session cookie's value for this token. */
export function sessionValue(token: string): string {
  return derived(token, 'session');
}

/** The CSRF field's value for this token: the pages put it in their forms. */
export function csrfValue(token: string): string {
  return derived(token, 'csrf');
}

/** The Set-Cookie header that signs a browser in. */
export function sessionCookie(token: string): string {
  return `${SESSION_COOKIE}=${sessionValue(token)}; HttpOnly; SameSite=Strict; Path=/`;
}

export interface Credential {
  via: 'bearer' | 'query' | 'body' | 'cookie';
  value: string;
}

function cookieValue(req: FastifyRequest): string | null {
  const cookie = req.headers.cookie
    ?.split(';')
    .map((c) => c.trim())
    .find((c) => c.startsWith(`${SESSION_COOKIE}=`));
  return cookie ? cookie.slice(SESSION_COOKIE.length + 1) : null;
}

/** What the request presents, in order of precedence; `query`: the `?token=` of a GET. */
export function presented(req: FastifyRequest, query: string | null): Credential | null {
  const auth = req.headers.authorization;
  if (auth?.startsWith('Bearer ')) return { via: 'bearer', value: auth.slice(7).trim() };
  if (query !== null) return { via: 'query', value: query };
  const body = req.body as { token?: unknown } | undefined;
  if (body && typeof body.token === 'string') return { via: 'body', value: body.token };
  const cookie = cookieValue(req);
  return cookie === null ? null : { via: 'cookie', value: cookie };
}

export type AuthOutcome = 'ok' | 'missing' | 'wrong' | 'unconfigured';

export function checkCredential(ctx: DashboardContext, given: Credential | null): AuthOutcome {
  if (ctx.token === null) return 'unconfigured';
  if (given === null || given.value === '') return 'missing';
  const expected = given.via === 'cookie' ? sessionValue(ctx.token) : ctx.token;
  return same(given.value, expected) ? 'ok' : 'wrong';
}

/** Whether a request signed in by cookie carries the page's CSRF value (form field or header). */
export function csrfMatches(ctx: DashboardContext, req: FastifyRequest): boolean {
  if (ctx.token === null) return false;
  const body = req.body as Record<string, unknown> | undefined;
  const header = req.headers['x-csrf-token'];
  const given =
    typeof body?.[CSRF_FIELD] === 'string' ? (body[CSRF_FIELD] as string) : typeof header === 'string' ? header : '';
  return given !== '' && same(given, csrfValue(ctx.token));
}

/** Answers a request that lacks the right token; logs who and where, never what was presented. */
export function refuse(
  ctx: DashboardContext,
  req: FastifyRequest,
  reply: FastifyReply,
  outcome: Exclude<AuthOutcome, 'ok'>,
): FastifyReply {
  if (outcome === 'unconfigured') {
    return reply
      .code(403)
      .type('text/plain')
      .send(
        'This dashboard has no token (--open-loopback), so it takes no write action. Start it without --open-loopback (or with ORCH_DASHBOARD_TOKEN set) to cancel from the page.\n',
      );
  }
  const where = { ip: req.ip, method: req.method, route: req.routeOptions.url ?? 'unknown' };
  // a missing token is every first visit: a wrong one is worth a warning
  if (outcome === 'wrong') ctx.log.warn(where, 'wrong dashboard token: refused with 401');
  else ctx.log.debug(where, 'missing dashboard token: refused with 401');
  return reply
    .code(401)
    .header('www-authenticate', 'Bearer realm="orch dashboard"')
    .type('text/plain')
    .send(
      `${outcome === 'missing' ? 'This needs' : 'Wrong token: this needs'} the dashboard token: open the URL orch dashboard printed at start (…/?token=TOKEN) or /login, or send Authorization: Bearer TOKEN. The token is in the file orch dashboard named, or in ORCH_DASHBOARD_TOKEN.\n`,
    );
}
