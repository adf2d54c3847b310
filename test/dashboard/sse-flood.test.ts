// A flood of live feeds (SSE) against `orch serve --http` (whose dashboard shared the scheduler's
// event loop when the audit flooded it) while an experiment runs on a real worker: connections
// from many loopback addresses (and a burst from one), to the cluster view, the queue view and the
// running experiment's feed, opened by a process of their own. Measured and asserted while they
// are held: at most 8 feeds per client and 256 in all are accepted, every other one is answered
// 503 with Retry-After; each accepted feed gets its Redis state and its first fragment; the Redis
// client count stays where it was (one blocking reader for every stream, not a client per page);
// /healthz answers within 1 s; the dashboard's memory grows by a bounded amount; and the leader
// key never lapses, never changes hands and its lease is never renewed late (its TTL, sampled
// every 50 ms, stays above a third of its full length). Then every feed is closed, and the
// dashboard holds none. SSE_FLOOD_CONNECTIONS sets the size (default 400, as in npm test; the
// audit's was 2000).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { type OrchChild, spawnOrch, startCluster } from '../orchestrator/orch-cluster.ts';
import { waitFor } from '../utils/wait-for.ts';

const CONNECTIONS = Number(process.env.SSE_FLOOD_CONNECTIONS ?? 400);
const PER_CLIENT = 8;
const TOTAL = 256;
/** a burst this large from one address: all but PER_CLIENT refused for that reason */
const BURST = 20;
const LEADER_TTL_MS = 1500;
const HOLD_MS = 5000;
/** Memory the dashboard's process may gain while it holds the feeds (measured: see the log line). */
const RSS_GROWTH_LIMIT_MB = 96;
const HEALTHZ_LIMIT_MS = 1000;

interface Feed {
  path: string;
  from: string;
  status: number | string | null;
  retry_after: string | null;
  body: string;
  fragments: number;
  redis: number;
}

function rssMb(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

async function timedGet(url: string, token: string): Promise<number> {
  const t = performance.now();
  const r = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(30_000) });
  await r.text();
  return performance.now() - t;
}

test(`${CONNECTIONS} live feeds on orch serve --http: bounded feeds, Redis clients and memory; /healthz answers; the leader's lease is never late`, async () => {
  const c = await startCluster();
  const token = 'flood-test-token-0123456789abcdef';
  let serve: OrchChild | null = null;
  let flood: ReturnType<typeof spawn> | null = null;
  let submit: OrchChild | null = null;
  const dir = mkdtempSync(join(tmpdir(), 'orch-sse-flood-'));
  try {
    serve = spawnOrch(['serve', '--leader-ttl', String(LEADER_TTL_MS), '--json', '--http', '0'], {
      ...c.env,
      ORCH_DASHBOARD_TOKEN: token,
    });
    const started = await waitFor(
      'orch serve --http listening',
      () => {
        const line = serve!
          .out()
          .split('\n')
          .find((l) => l.includes('"event":"dashboard"'));
        if (!line) return null;
        const e = JSON.parse(line) as { address?: string; why?: string; pid?: number };
        const at = /http:\/\/[\d.]+:\d+/.exec(e.address ?? e.why ?? '')?.[0];
        // the process that serves the dashboard: its own, or (in one process) serve's
        return at ? { address: at, pid: e.pid ?? serve!.child.pid! } : null;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    const { address, pid: dashboardPid } = started;
    const port = Number(new URL(address).port);
    const leaderKey = `${c.prefix}:sched:leader`;
    const leader = await waitFor('a leader', () => c.redis.get(leaderKey), { timeoutMs: 20_000, intervalMs: 50 });
    await c.startWorker({ cpuCards: 1, repMs: 1500 });
    submit = spawnOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml', '--results', join(dir, 'results')], c.env);
    const id = await waitFor(
      'the experiment running',
      async () => {
        const x = (await c.redis.zrange(`${c.prefix}:exps`, '0', '-1'))[0];
        return x && (await c.redis.hget(`${c.prefix}:experiment:${x}`, 'state')) === 'running' ? x : null;
      },
      { timeoutMs: 30_000, intervalMs: 50 },
    );

    const clients = async () => ((await c.redis.client('LIST')) as string).trim().split('\n').length;
    // settle: the dashboard's own connections are open (a page of each view once)
    for (const p of ['/', '/queue', `/experiments/${id}`]) await timedGet(`${address}${p}`, token);
    const clientsBefore = await clients();
    const rssBefore = rssMb(dashboardPid);

    // sampling: the leader key every 50 ms, /healthz every 200 ms, Redis clients and RSS every 500 ms
    let sampling = true;
    const leaderSamples: { holder: string | null; pttl: number }[] = [];
    const healthz: number[] = [];
    let clientsMax = clientsBefore;
    let rssMax = rssBefore;
    const loops = [
      (async () => {
        while (sampling) {
          const [[, holder], [, pttl]] = (await c.redis.multi().get(leaderKey).pttl(leaderKey).exec()) as [
            [null, string | null],
            [null, number],
          ];
          leaderSamples.push({ holder, pttl });
          await new Promise((r) => setTimeout(r, 50));
        }
      })(),
      (async () => {
        while (sampling) {
          healthz.push(await timedGet(`${address}/healthz`, token).catch(() => Number.POSITIVE_INFINITY));
          await new Promise((r) => setTimeout(r, 200));
        }
      })(),
      (async () => {
        while (sampling) {
          clientsMax = Math.max(clientsMax, await clients());
          rssMax = Math.max(rssMax, rssMb(dashboardPid));
          await new Promise((r) => setTimeout(r, 500));
        }
      })(),
    ];

    const paths = ['/live?view=cluster', '/live?view=queue', `/live/experiments/${encodeURIComponent(id)}`];
    const addresses = 1 + Math.ceil((CONNECTIONS - BURST) / PER_CLIENT);
    flood = spawn(
      process.execPath,
      [
        'test/fixtures/sse-flood-client.mjs',
        String(port),
        token,
        String(CONNECTIONS),
        String(BURST),
        String(PER_CLIENT),
        String(HOLD_MS),
        ...paths,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    flood.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    await new Promise<void>((resolve) => flood!.once('exit', () => resolve()));
    sampling = false;
    await Promise.all(loops);
    const report = JSON.parse(out) as { answered_ms: number | null; feeds: Feed[] };
    const feeds = report.feeds;
    const answeredMs = report.answered_ms ?? Number.NaN;

    const accepted = feeds.filter((f) => f.status === 200);
    const refused = feeds.filter((f) => f.status === 503);
    const pttls = leaderSamples.map((s) => s.pttl);
    const minPttl = Math.min(...pttls);
    const holders = new Set(leaderSamples.map((s) => s.holder));
    console.log(
      `${CONNECTIONS} feeds from ${addresses} addresses answered in ${answeredMs.toFixed(0)} ms: ${accepted.length} accepted, ${refused.length} refused (503); ` +
        `Redis clients ${clientsBefore} -> max ${clientsMax}; dashboard RSS ${rssBefore.toFixed(0)} -> max ${rssMax.toFixed(0)} MB; ` +
        `/healthz max ${Math.max(...healthz).toFixed(0)} ms over ${healthz.length}; leader sampled ${leaderSamples.length}x, min PTTL ${minPttl} ms of ${LEADER_TTL_MS}, holders ${holders.size}`,
    );

    assert.equal(
      accepted.length + refused.length,
      CONNECTIONS,
      `every feed is accepted or refused with 503: ${[...new Set(feeds.map((f) => f.status))].join(', ')}`,
    );
    assert.equal(
      accepted.length,
      Math.min(TOTAL, PER_CLIENT + (CONNECTIONS - BURST)),
      'the total and per-client limits, exactly',
    );
    assert.equal(
      feeds.slice(0, BURST).filter((f) => f.status === 200).length,
      PER_CLIENT,
      `${PER_CLIENT} feeds for one client address`,
    );
    for (const f of refused) {
      assert.equal(f.retry_after, '10');
      assert.match(
        f.body,
        /No live feed for now: (this client \(127\.0\.0\.200\) holds 8|the dashboard holds 256) live feeds already/,
      );
    }
    assert.ok(
      accepted.every((f) => f.redis >= 1),
      'every accepted feed got the Redis state',
    );
    assert.ok(
      accepted.every((f) => f.fragments >= 1),
      `every accepted feed got its first fragment (${accepted
        .filter((f) => f.fragments < 1)
        .map((f) => f.path)
        .slice(0, 3)
        .join(', ')} did not)`,
    );
    assert.ok(
      clientsMax - clientsBefore <= 2,
      `Redis clients ${clientsBefore} -> ${clientsMax}: the feeds opened clients of their own`,
    );
    assert.ok(
      Math.max(...healthz) < HEALTHZ_LIMIT_MS,
      `/healthz took ${Math.max(...healthz).toFixed(0)} ms at worst (limit ${HEALTHZ_LIMIT_MS})`,
    );
    assert.ok(
      rssMax - rssBefore <= RSS_GROWTH_LIMIT_MB,
      `dashboard RSS grew ${(rssMax - rssBefore).toFixed(0)} MB (limit ${RSS_GROWTH_LIMIT_MB})`,
    );
    assert.deepEqual([...holders], [leader], 'the leader key never lapsed nor changed hands');
    assert.ok(
      minPttl > LEADER_TTL_MS / 3,
      `the lease's TTL fell to ${minPttl} ms of ${LEADER_TTL_MS}: a renewal (every ${LEADER_TTL_MS / 3} ms) came late`,
    );

    await waitFor(
      'the dashboard holds no feed',
      async () => {
        const r = await fetch(`${address}/healthz`, { headers: { authorization: `Bearer ${token}` } });
        return ((await r.json()) as { live_feeds?: number }).live_feeds === 0;
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
  } finally {
    if (flood && flood.exitCode === null) flood.kill('SIGKILL');
    for (const child of [submit, serve]) {
      if (!child || child.child.exitCode !== null || child.child.signalCode !== null) continue;
      child.child.kill('SIGTERM');
      const t = setTimeout(() => child.child.kill('SIGKILL'), 5000);
      await child.exited;
      clearTimeout(t);
    }
    await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
