/**
 * The scheduler with a long queue: 10, 1 000 and 10 000 experiments queued (one one-rank block
 * each) on 8 stand-in cards, the base tree and this one in the same run, each row a fresh process
 * (bench/lib/queue-probe.ts) with its own redis-server. Columns: registration time and Redis
 * growth, the scheduler process's CPU share and CPU per grant pass from its election until the
 * queue is empty or the window ends, experiments finished per second, and `orch status`'s time
 * (clusterStatus + renderStatus) and output size.
 *
 * Run: npm run bench -- queue-scale
 * Environment: BENCH_BASE (the tree compared with: a worktree of the base commit, required), BENCH_QUEUES ("10,1000,10000"),
 * BENCH_WINDOW_MS (15000).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

// the bench's own knobs, not orch's environment (cli/environment.ts): read as the other benches do
const env = process.env;
const base = env.BENCH_BASE ?? '';
const queues = (env.BENCH_QUEUES ?? '10,1000,10000').split(',').map(Number);
const windowMs = env.BENCH_WINDOW_MS ?? '15000';
if (!existsSync(`${base}/orchestrator/scheduler/scheduler.ts`)) {
  console.error(
    `BENCH_BASE=${base || '(unset)'} is not an orch tree: set it to a checkout of the base commit (git worktree add ../base <commit>)`,
  );
  process.exit(1);
}

interface Row {
  queued: number;
  registerMs: number;
  redisMB: [number, number];
  cpuShare: number;
  passesPerS: number;
  cpuMsPerPass: number;
  finishedPerS: number;
  statusMs: number;
  statusBytes: number;
  statusJsonBytes: number;
}

function probe(tree: string, queued: number): Row {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'bench/lib/queue-probe.ts'], {
    env: { ...env, BENCH_TREE: tree, BENCH_QUEUED: String(queued), BENCH_WINDOW_MS: windowMs },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 240_000,
  });
  const line = r.stdout.trim().split('\n').pop() ?? '';
  if (r.status !== 0 || !line.startsWith('{'))
    throw new Error(`queue-probe of ${tree} with ${queued} queued failed (exit ${r.status}): ${r.stdout.slice(-500)}`);
  return JSON.parse(line) as Row;
}

const rows = queues.map((q) => ({ q, before: probe(base, q), after: probe(process.cwd(), q) }));
const metrics: [string, (r: Row) => number, number][] = [
  ['register, s', (r) => r.registerMs / 1000, 2],
  ['Redis after registering, MB', (r) => r.redisMB[1], 1],
  ['scheduler CPU, % of a core', (r) => r.cpuShare * 100, 0],
  ['grant passes/s', (r) => r.passesPerS, 0],
  ['scheduler CPU ms per pass', (r) => r.cpuMsPerPass, 1],
  ['experiments finished/s', (r) => r.finishedPerS, 1],
  ['orch status, ms', (r) => r.statusMs, 0],
  ['orch status text, KB', (r) => r.statusBytes / 1024, 1],
  ['orch status --json, KB', (r) => r.statusJsonBytes / 1024, 1],
];
console.log(
  `\nqueue scale: before = ${base}, after = this tree; 8 cards, 20-40 ms one-rank blocks, window ${windowMs} ms; load ${(
    await import('node:os')
  )
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}\n`,
);
console.log('| | queued | before | after | after/before |');
console.log('| --- | --- | --- | --- | --- |');
for (const [name, f, digits] of metrics) {
  for (const { q, before, after } of rows) {
    const b = f(before);
    const a = f(after);
    console.log(`| ${name} | ${q} | ${b.toFixed(digits)} | ${a.toFixed(digits)} | ${(a / b).toFixed(2)} |`);
  }
}
