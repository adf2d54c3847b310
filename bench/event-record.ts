/**
 * An experiment's event record at scale: BENCH_EVENTS events (default 100 000; the reported
 * case is 3 000 000) planted in a private redis-server (test/utils/synthetic-record.ts: a real
 * submit of configs/ab.yaml, two ranks' rep lines with timed spans, warm-up and hashes, output
 * lines between them), then, for this checkout and (with BENCH_BASE=<worktree>) a base one, the
 * real CLI of each:
 *   orch report ID        results written from Redis (what orch submit does at the end)
 *   orch report --from    every report file rebuilt from the directory alone
 * Each row: wall ms and the child's peak RSS (its own VmHWM, test/utils/peak-rss.mjs), and the
 * ratio of this checkout's to the base's. The base's events.jsonl is the one it wrote itself.
 * Needs node, redis-server on PATH (or ORCH_REDIS_SERVER); no graphrt, no network.
 *
 *   npm run bench -- event-record
 *   BENCH_EVENTS=3000000 BENCH_BASE=<worktree of the base commit> node --import tsx bench/event-record.ts
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startRedisServer } from '../store/redis-server-process.ts';
import { type MeasuredRun, measureOrch } from '../test/utils/measure-orch.ts';
import { client } from '../test/utils/redis.ts';
import { plantRecord } from '../test/utils/synthetic-record.ts';

// bench knobs, not orch's environment (cli/environment.ts lists orch's own)
const env = process.env;
const N = Number(env.BENCH_EVENTS ?? 100_000);
const base = env.BENCH_BASE ? resolve(env.BENCH_BASE) : null;
const trees: [string, string][] = [...(base ? [['base', base] as [string, string]] : []), ['this', process.cwd()]];

const server = await startRedisServer();
const redis = client(server.url);
const root = mkdtempSync(join(tmpdir(), 'orch-bench-events-'));
const rows: { tree: string; cmd: string; run: MeasuredRun }[] = [];
try {
  const prefix = 'bench';
  const t0 = performance.now();
  const id = await plantRecord(redis, prefix, N);
  console.log(
    `${N} events planted in ${((performance.now() - t0) / 1000).toFixed(1)} s (${(Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]) / 2 ** 20).toFixed(0)} MiB in Redis)`,
  );
  for (const [tree, cwd] of trees) {
    const results = join(root, tree);
    const env = { REDIS_URL: server.url, ORCH_PREFIX: prefix, ORCH_LOG: 'warn', ORCH_FROM_SOURCE: '1' };
    const w = measureOrch(['report', id, '--results', results], env, { cwd, timeoutMs: 1_800_000 });
    rows.push({ tree, cmd: 'orch report ID', run: w });
    const dir = join(results, id);
    let size = '';
    try {
      size = ` (events.jsonl ${(statSync(join(dir, 'events.jsonl')).size / 2 ** 20).toFixed(0)} MiB)`;
    } catch {
      size = ' (no events.jsonl)';
    }
    const f = measureOrch(['report', '--from', dir], { ...env, REDIS_URL: '' }, { cwd, timeoutMs: 1_800_000 });
    rows.push({ tree, cmd: `orch report --from${size}`, run: f });
  }
} finally {
  redis.disconnect();
  await server.stop();
  rmSync(root, { recursive: true, force: true });
}

const ok = (r: MeasuredRun) => r.status !== null && [0, 3, 4, 5].includes(r.status);
const outcome = (r: MeasuredRun) =>
  ok(r)
    ? `exit ${r.status}`
    : `FAILED exit ${r.status}: ${/(RangeError[^\n]*|FATAL ERROR[^\n]*|Cannot create a string[^\n]*|heap out of memory)/.exec(r.stderr)?.[1] ?? r.stderr.trim().split('\n').at(-1) ?? ''}`;
console.log(
  `\nevents: ${N}; load average ${loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}`,
);
const head = ['tree', 'command', 'wall s', 'peak RSS MiB', '× base time', '× base RSS', 'outcome'];
const table = rows.map(({ tree, cmd, run }) => {
  const b = rows.find((r) => r.tree === 'base' && r.cmd.split(' (')[0] === cmd.split(' (')[0]);
  const ratio = (x: number, y: number | undefined) =>
    tree === 'base' || y === undefined || !b || !ok(b.run) ? '' : (x / y).toFixed(2);
  return [
    tree,
    cmd,
    (run.ms / 1000).toFixed(1),
    Number.isNaN(run.peak_mib) ? '-' : run.peak_mib.toFixed(0),
    ratio(run.ms, b?.run.ms),
    ratio(run.peak_mib, b?.run.peak_mib),
    outcome(run),
  ];
});
const widths = head.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)));
console.log(head.map((h, i) => h.padEnd(widths[i]!)).join('  '));
for (const r of table) console.log(r.map((c, i) => c.padEnd(widths[i]!)).join('  '));
