/**
 * A dashboard in this process against a real redis-server, with its log lines kept for the
 * tests to read; and the cluster helpers (test/orchestrator/orch-cluster.ts) to run experiments.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { startDashboard, type Dashboard } from '../../orchestrator/dashboard/server.ts';

export interface TestDashboard extends Dashboard {
  logText(): string;
}

export async function testDashboard(opts: { url: string; prefix: string; token?: string | null; resultsRoot?: string; host?: string }): Promise<TestDashboard> {
  let text = '';
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString();
      done();
    },
  });
  const d = await startDashboard({
    url: opts.url,
    prefix: opts.prefix,
    host: opts.host ?? '127.0.0.1',
    port: 0,
    token: opts.token ?? null,
    resultsRoot: opts.resultsRoot ?? 'results',
    log: pino({ level: 'info' }, sink),
  });
  return { ...d, logText: () => text };
}

export async function get(url: string, init?: RequestInit): Promise<{ status: number; text: string; type: string }> {
  const r = await fetch(url, init);
  return { status: r.status, text: await r.text(), type: r.headers.get('content-type') ?? '' };
}
