/**
 * Redis under memory pressure, with real processes: a redis-server with a 16 MiB maxmemory
 * (noeviction), a real worker, the production scheduler in this process.
 *
 * - A rank that floods its output (test/fixtures/ranks/flood-output.sh: 30 000 lines a rep, 20
 *   reps, 60 MB in all) never fills Redis: the rep bound and the experiment's budget
 *   (jobs/line-limit.ts, store/lua/append-event.lua) stop it, each noted in the stream, every
 *   line not stored counted; the experiment ends done and the scheduler's log stays short.
 * - A Redis that is full (filled to maxmemory while a block's worker is dead, so the lost
 *   attempt's end cannot be written): the scheduler backs off and logs the failure once instead
 *   of re-attaching the lost attempt in a loop, a waiting submit says Redis refuses writes, a new
 *   submit fails with REDIS_OOM and its hint (no stack), and once memory is freed the
 *   experiment ends done.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { OUTPUT_PER_REP } from '../../jobs/line-limit.ts';
import { waitForEnd } from '../../orchestrator/experiment/progress.ts';
import { readOutputBudget } from '../../store/event-budget.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { orchKeys } from '../../store/keys.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { client, freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';
import { ORCH_BIN, spawnWorker, type WorkerProcess } from '../utils/worker-process.ts';
import { abSpec, type InProcessScheduler, startScheduler, submitYaml, waitEnded } from './in-process-scheduler.ts';

const MAXMEMORY = 16 * 1024 * 1024;
const FLOOD = fileURLToPath(new URL('../fixtures/ranks/flood-output.sh', import.meta.url));
const FLOOD_LINES = 30_000;
const REPS = 10;

// each test has a redis-server of its own (one the flood filled must not be the next test's)
let server: RedisServerProcess;
let redis: Redis;
let dir: string;
const workers: WorkerProcess[] = [];
const schedulers: InProcessScheduler[] = [];
beforeEach(async () => {
  server = await startRedisServer({ config: { maxmemory: String(MAXMEMORY) } });
  redis = client(server.url);
  dir = mkdtempSync(join(tmpdir(), 'orch-redis-pressure-'));
});
afterEach(async () => {
  for (const s of schedulers.splice(0)) await s.stop();
  for (const w of workers) w.kill();
  await Promise.all(workers.splice(0).map((w) => w.exited));
  redis.disconnect();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function memory(): Promise<{ used: number; oomRefusals: number }> {
  const [mem, errs] = await Promise.all([redis.info('memory'), redis.info('errorstats')]);
  return {
    used: Number(/used_memory:(\d+)/.exec(mem)![1]),
    oomRefusals: Number(/errorstat_OOM:count=(\d+)/.exec(errs)?.[1] ?? 0),
  };
}

async function worker(
  prefix: string,
  host: string,
  env: Record<string, string> = {},
  heartbeatMs = 300,
): Promise<WorkerProcess> {
  const w = await spawnWorker({
    redisUrl: server.url,
    host,
    prefix,
    lockDir: join(dir, `locks-${host}`),
    heartbeatMs,
    env,
  });
  workers.push(w);
  return w;
}

function floodSpec(): string {
  return `name: flood
design: ab
workload:
  runtime: command
  run:
    cmd: sh ${FLOOD}
    env: { FLOOD_LINES: "${FLOOD_LINES}", FLOOD_STEPS: "3" }
    timeout_s: 60
  toggles:
    FAST: { env: FLOOD_FAST, on: "1", off: "0" }
  metric_source:
    format: regex
    pattern: 'timer step (?<step>\\d+): total=(?<value>[0-9.]+)ms'
    value_group: value
    step_group: step
  warmup: 1
  steps: 2
toggles: [FAST]
arms:
  - { name: slow, toggles: { FAST: false } }
  - { name: fast, toggles: { FAST: true } }
reps: ${REPS}
blocks: { count: 1, ranks: 1 }
gates: { identity: false, aa: false }
metric: { name: ms, better: lower }
`;
}

test('a rank flooding its output: bounded per rep and per experiment, Redis never refuses a write, the experiment ends done', async () => {
  const prefix = freshPrefix('flood');
  const keys = orchKeys(prefix);
  // a longer lease than the other test's: parsing 30 000 lines a rep on a loaded machine must not
  // make the renewals late (a retried attempt is not what this test is about)
  await worker(prefix, 'hf', {}, 1500);
  const sched = await startScheduler({ url: server.url, prefix, lostAfterMs: 1000 });
  schedulers.push(sched);
  const before = await memory();
  let peak = before.used;
  const id = await submitYaml(redis, prefix, dir, 'flood', floodSpec());
  const started = Date.now();
  let state: string | null = null;
  while (state === null && Date.now() - started < 60_000) {
    peak = Math.max(peak, (await memory()).used);
    const s = await new ExperimentStore(redis, prefix).state(id);
    if (s === 'done' || s === 'failed' || s === 'cancelled') state = s;
    else await new Promise((r) => setTimeout(r, 100));
  }
  const after = await memory();
  const secs = (Date.now() - started) / 1000;
  const budget = await readOutputBudget(redis, prefix, id);
  console.log(
    `flood: ${state ?? 'not ended'} in ${secs.toFixed(1)} s; Redis peak ${(peak / 2 ** 20).toFixed(1)} MiB of ${MAXMEMORY / 2 ** 20}, OOM refusals ${after.oomRefusals - before.oomRefusals}; output stored ${budget.lines} lines / ${budget.bytes} bytes, dropped ${budget.dropped_lines} / ${budget.dropped_bytes}; scheduler log ${sched.log().length} lines`,
  );
  const attempts = (await new ExperimentStore(redis, prefix).block(id, 0))?.attempts ?? [];
  console.log(`block 0 attempts: ${JSON.stringify(attempts.map((a) => [a.attempt, a.outcome, a.reason]))}`);
  assert.equal(after.oomRefusals - before.oomRefusals, 0, 'Redis refused no write (OOM) during the flood');
  assert.ok(peak < MAXMEMORY * 0.75, `Redis peaked at ${peak} bytes, near its maxmemory ${MAXMEMORY}`);
  assert.equal(state, 'done', 'the experiment ended done within 60 s');
  const entries = (await redis.xrange(keys.events(id), '-', '+')) as [string, string[]][];
  const events = entries.map(([, flat]) => flat[flat.indexOf('event') + 1]!);
  const repNotes = events.filter((e) => e.includes('"output-truncated"') && e.includes('"scope":"rep"'));
  assert.equal(repNotes.length, 2 * REPS, 'one rep note per rep');
  assert.equal(
    events.filter((e) => e.includes('"output-truncated"') && e.includes('"scope":"experiment"')).length,
    1,
    'the experiment note written once',
  );
  const printed = 2 * REPS * (FLOOD_LINES + 3);
  assert.equal(budget.lines + budget.dropped_lines, printed, 'every line printed is stored or counted dropped');
  assert.ok(
    budget.lines < 2 * REPS * OUTPUT_PER_REP.lines,
    'the experiment budget stopped output before the rep bounds alone would have',
  );
  assert.equal(
    events.filter((e) => e.includes('"type":"rep"')).length,
    2 * REPS,
    'every rep answer stored past both bounds',
  );
  assert.ok(sched.log().length < 60, `the scheduler logged ${sched.log().length} lines`);
});

/**
 * Fills Redis to its maxmemory with keys outside orch's prefix, 512 KiB a call: Redis checks
 * maxmemory when a script starts, not at each write inside it. Returns how many keys it wrote.
 */
async function fillRedis(): Promise<number> {
  for (let n = 0; n < 1000; n++) {
    try {
      await redis.eval(
        "for i = 1, 64 do redis.call('SET', 'junk:' .. (ARGV[1] * 64 + i), string.rep('x', 8192)) end return 1",
        0,
        n,
      );
    } catch (err) {
      if (/^OOM/.test((err as Error).message)) return n * 64;
      throw err;
    }
  }
  throw new Error('Redis never reached its maxmemory');
}

async function freeRedis(keys: number): Promise<void> {
  await redis.eval("for i = 1, tonumber(ARGV[1]) do redis.call('DEL', 'junk:' .. i) end return 1", 0, keys);
}

test('a full Redis: the scheduler backs off and logs once, a waiting submit says why, a new submit gets REDIS_OOM; freed, the experiment ends', async () => {
  const prefix = freshPrefix('oom');
  const keys = orchKeys(prefix);
  const w1 = await worker(prefix, 'h1', { FIXTURE_REP_MS: '300' });
  const sched = await startScheduler({ url: server.url, prefix, lostAfterMs: 300 });
  schedulers.push(sched);
  const id = await submitYaml(redis, prefix, dir, 'oom', abSpec('oom', 1, 6));
  const store = new ExperimentStore(redis, prefix);
  await waitFor(
    'block 0 measuring',
    async () => (await store.block(id, 0))?.phase === 'running' && (await redis.xlen(keys.events(id))) >= 3,
    { timeoutMs: 30_000 },
  );
  // the block's worker dies, and Redis fills before its lost attempt's end can be written
  w1.child.kill('SIGKILL');
  await w1.exited;
  const filled = await fillRedis();
  assert.ok(filled > 0, 'Redis reached its maxmemory');
  await waitFor(
    'the scheduler failed on the full Redis',
    () => sched.log().some((l) => JSON.stringify(l).includes('OOM command not allowed')),
    { timeoutMs: 20_000 },
  );
  const atFailure = sched.log().length;

  // the scheduler, still leading on the full Redis, retries with back-off: a few lines, no loop
  const windowStart = Date.now();
  await waitFor('a 5 s window', () => Date.now() - windowStart >= 5000, { timeoutMs: 10_000, intervalMs: 100 });
  const during = sched.log().slice(atFailure);
  console.log(
    `scheduler log while full: ${during.length} lines in ${((Date.now() - windowStart) / 1000).toFixed(1)} s; ${JSON.stringify(during.slice(0, 5).map((l) => l.msg))}`,
  );
  assert.ok(during.length <= 10, `the scheduler logged ${during.length} lines while Redis was full`);

  // a submit already waiting says why
  const abort = new AbortController();
  const bound = setTimeout(() => abort.abort(), 10_000);
  const reasons: string[] = [];
  const exp = (await store.get(id))!;
  await waitForEnd(redis, prefix, exp, {
    signal: abort.signal,
    waitReportMs: 300,
    onWaiting: (why) => {
      reasons.push(why);
      abort.abort();
    },
  });
  clearTimeout(bound);
  assert.match(reasons[0] ?? '', /^waiting: Redis refuses writes \(OOM: used .* of maxmemory 16\.0 MiB\)/);

  // a new submit into the full Redis: REDIS_OOM with what filled it, no stack
  const spec = join(dir, 'oom-2.yaml');
  writeFileSync(spec, abSpec('oom2', 1, 2));
  const cli = spawn(process.execPath, [ORCH_BIN, 'submit', spec, '--results', join(dir, 'results')], {
    env: { ...process.env, REDIS_URL: server.url, ORCH_PREFIX: prefix, ORCH_LOG: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  cli.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  cli.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const code = await new Promise<number | null>((r) => cli.once('close', r));
  console.log(`submit into the full Redis: exit ${code}\n${output.trim()}`);
  assert.equal(code, 2, output);
  assert.match(
    output,
    /orch: Redis refused to write while submitting .*: it is at maxmemory \(used .* of maxmemory 16\.0 MiB\)/,
  );
  assert.match(
    output,
    /hint: orch's \d+ keys under "oom[0-9a-f]+" hold .* of the .* used, the largest .*:events .*; raise maxmemory .*orch cancel/,
  );
  assert.doesNotMatch(output, /internal error| {4}at /);

  // any other command that meets the full Redis (a worker registering its cards): the same code
  const refused = await spawnWorker({
    redisUrl: server.url,
    host: 'h3',
    prefix,
    lockDir: join(dir, 'locks-h3'),
    noWait: true,
  });
  workers.push(refused);
  const exit = await refused.exited;
  const said = refused
    .log()
    .split('\n')
    .filter((l) => l.startsWith('orch:') || l.startsWith('  hint:'))
    .join('\n');
  console.log(`a worker starting on the full Redis: exit ${exit.code}\n${said}`);
  assert.equal(exit.code, 2, refused.log().slice(-2000));
  assert.match(said, /^orch: Redis refused a write: OOM command not allowed .*\n {2}hint: raise maxmemory/);
  assert.doesNotMatch(refused.log(), /internal error/);

  await freeRedis(filled);
  await worker(prefix, 'h2', { FIXTURE_REP_MS: '20' });
  const freedAt = Date.now();
  const state = await waitEnded(redis, prefix, id, 60_000);
  console.log(
    `freed: experiment ${state} after ${((Date.now() - freedAt) / 1000).toFixed(1)} s; the scheduler's log, all of it:\n${sched
      .log()
      .map((l) => `  ${l.msg}`)
      .join('\n')}`,
  );
  assert.equal(state, 'done');
  assert.ok(
    sched.log().some((l) => / recovered \(\d+ repeated failures were not logged\)/.test(l.msg)),
    'the recovery is logged',
  );
});
