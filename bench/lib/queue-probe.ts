/**
 * One row of bench/queue-scale.ts, in its own process: the scheduler of the tree `BENCH_TREE`
 * (this checkout, or the base it is compared with) with `BENCH_QUEUED` experiments queued on a
 * private redis-server, 8 stand-in cards (this checkout's stand-in-fleet.ts) running one-rank
 * blocks of 20-40 ms. Prints one JSON line: registration time and Redis growth; from the
 * scheduler's election until the queue is empty or `BENCH_WINDOW_MS` passed, its process's CPU
 * share, its passes (one lease read of the 8 cards each) and experiments finished per second;
 * and what `orch status` reads and prints (clusterStatus + renderStatus of that tree).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { newClusterSecret } from '../../jobs/grant.ts';
import { newSubmitToken } from '../../store/submit-token.ts';
import { specText, startFleet, usedMemory } from './scale-run.ts';

const env = process.env;
const tree = env.BENCH_TREE ?? process.cwd();
const queued = Number(env.BENCH_QUEUED ?? 1000);
const windowMs = Number(env.BENCH_WINDOW_MS ?? 10_000);

const { startRedisServer } = (await import(
  `${tree}/store/redis-server-process.ts`
)) as typeof import('../../store/redis-server-process.ts');
const { connectRedis, waitReady } = (await import(
  `${tree}/store/connect.ts`
)) as typeof import('../../store/connect.ts');
const { loadSpec } = (await import(
  `${tree}/jobs/load-spec.ts`
)) as typeof import('../../orchestrator/spec/load-spec.ts');
const { submitExperiment } = (await import(
  `${tree}/orchestrator/experiment/submit.ts`
)) as typeof import('../../orchestrator/experiment/submit.ts');
const { Scheduler } = (await import(
  `${tree}/orchestrator/scheduler/scheduler.ts`
)) as typeof import('../../orchestrator/scheduler/scheduler.ts');
const { clusterStatus, renderStatus } = (await import(
  `${tree}/orchestrator/experiment/cluster-status.ts`
)) as typeof import('../../orchestrator/experiment/cluster-status.ts');

const server = await startRedisServer();
const prefix = 'queue';
const log = pino({ level: 'silent' });
const redis = connectRedis(server.url, { log, name: 'bench-driver' });
const secret = newClusterSecret().toString('hex');
const submitToken = newSubmitToken();
const fleet = startFleet({
  url: server.url,
  prefix,
  first: 0,
  hosts: 2,
  cardsPerHost: 4,
  secret,
  heartbeatMs: 1000,
  runMs: [20, 40],
  seed: 1,
});
try {
  await waitReady(redis);
  await fleet.ready;
  const file = join(mkdtempSync(join(tmpdir(), 'orch-queue-')), 'q.yaml');
  const text = specText('q', 1, 1, 2);
  writeFileSync(file, text);
  const loaded = loadSpec(file);
  const mem0 = await usedMemory(redis);
  const t0 = performance.now();
  for (let i = 0; i < queued; i += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, queued - i) }, (_, k) =>
        submitExperiment({ redis, prefix, loaded, submitToken, id: `q-${i + k}` }),
      ),
    );
  }
  const registerMs = performance.now() - t0;
  const mem1 = await usedMemory(redis);

  // a pass reads the leases of every live card in one script: 8 keys
  let passes = 0;
  const proto = Redis.prototype as unknown as {
    sendCommand: (this: Redis, c: { name: string; args: unknown[] }, ...rest: unknown[]) => unknown;
  };
  const send = proto.sendCommand;
  proto.sendCommand = function (this: Redis, c: { name: string; args: unknown[] }, ...rest: unknown[]) {
    if (c.name === 'evalsha' && String(c.args[1]) === '8' && String(c.args[2]).includes(':lease:')) passes++;
    return send.call(this, c, ...rest);
  };
  const scheduler = new Scheduler({ url: server.url, prefix, log, secret: Buffer.from(secret, 'utf8'), submitToken });
  scheduler.start();
  while (!scheduler.isLeader) await new Promise((r) => setTimeout(r, 20));
  const active = () => redis.zcard(`${prefix}:sched:active`);
  // from the leader's start (its first passes read the queue) until the queue is empty or the window ends
  const cpu0 = process.cpuUsage();
  const w0 = performance.now();
  while (performance.now() - w0 < windowMs && (await active()) > 0) await new Promise((r) => setTimeout(r, 100));
  const cpu = process.cpuUsage(cpu0);
  const wall = performance.now() - w0;
  const passCount = passes;
  const finished = queued - (await active());
  await scheduler.stop();

  const s0 = performance.now();
  const status = await clusterStatus(redis, prefix, {});
  const statusText = renderStatus(status);
  const statusMs = performance.now() - s0;
  const cpuMs = (cpu.user + cpu.system) / 1000;
  console.log(
    JSON.stringify({
      queued,
      registerMs,
      redisMB: [mem0 / 2 ** 20, mem1 / 2 ** 20],
      cpuShare: cpuMs / wall,
      passesPerS: (passCount * 1000) / wall,
      cpuMsPerPass: passCount > 0 ? cpuMs / passCount : NaN,
      finishedPerS: (finished * 1000) / wall,
      statusMs,
      statusBytes: Buffer.byteLength(statusText),
      statusJsonBytes: Buffer.byteLength(JSON.stringify(status, null, 2)),
    }),
  );
} finally {
  fleet.kill();
  redis.disconnect();
  await server.stop();
}
// what is still open after the scheduler stopped (a diagnosis when a tree's stop leaves a handle), then out
const open = (process as unknown as { _getActiveHandles: () => object[] })
  ._getActiveHandles()
  .map((h) => h.constructor.name);
if (env.BENCH_HANDLES) console.error(`open handles: ${open.join(', ')}`);
process.exit(0);
