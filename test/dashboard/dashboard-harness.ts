/**
 * A dashboard in this process against a real redis-server, with its log lines kept for the
 * tests to read; and the cluster helpers (test/orchestrator/orch-cluster.ts) to run experiments.
 * It has a token unless the test asks for an open one (`token: null`, which is --open-loopback);
 * `d.get(path)` sends it as a Bearer header, the module's `get(url)` sends nothing of its own.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { type Dashboard, startDashboard } from '../../orchestrator/dashboard/server.ts';
import type { SseLimits } from '../../orchestrator/dashboard/sse-admission.ts';

export interface TestDashboard extends Dashboard {
  /** null: an open (--open-loopback) dashboard */
  token: string | null;
  logText(): string;
  /** GET (or `init.method`) `path` with the token as a Bearer header */
  get(path: string, init?: RequestInit): Promise<Answer>;
}

export interface Answer {
  status: number;
  text: string;
  type: string;
  headers: Headers;
}

export async function testDashboard(opts: {
  url: string;
  prefix: string;
  token?: string | null;
  resultsRoot?: string;
  host?: string;
  sse?: SseLimits;
}): Promise<TestDashboard> {
  let text = '';
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString();
      done();
    },
  });
  const token = opts.token === undefined ? `test-${randomBytes(16).toString('hex')}` : opts.token;
  const d = await startDashboard({
    url: opts.url,
    prefix: opts.prefix,
    host: opts.host ?? '127.0.0.1',
    port: 0,
    token,
    openLoopback: token === null,
    resultsRoot: opts.resultsRoot ?? 'results',
    log: pino({ level: 'info' }, sink),
    ...(opts.sse ? { sse: opts.sse } : {}),
  });
  return {
    ...d,
    token,
    logText: () => text,
    get: (path, init = {}) =>
      get(`${d.address}${path}`, {
        ...init,
        headers: {
          ...(token === null ? {} : { authorization: `Bearer ${token}` }),
          ...(init.headers as Record<string, string> | undefined),
        },
      }),
  };
}

export async function get(url: string, init?: RequestInit): Promise<Answer> {
  const r = await fetch(url, { redirect: 'manual', ...init });
  return { status: r.status, text: await r.text(), type: r.headers.get('content-type') ?? '', headers: r.headers };
}
