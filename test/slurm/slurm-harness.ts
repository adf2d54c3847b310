/**
 * The Slurm tests' world: a real redis-server, the production Scheduler in this process, and
 * `orch worker`s started by `orch slurm up` under the real slurmctld/slurmd that .ci/slurm-up
 * starts (fake GPUs: each worker's cards are cpu cards of its GRES indexes, run by the protocol
 * fixture rank). The ledger row is the chaos table's: planned, measured, failed with a reason,
 * measured twice (test/chaos/rep-ledger.ts).
 */
import '../utils/cluster-secret.ts';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { plannedReps, repKey } from '../../jobs/rep-ref.ts';
import { CardRegistry, type HostInfo } from '../../store/card-registry.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { ResultStore } from '../../store/result-store.ts';
import { auditReps, type LedgerRow } from '../chaos/rep-ledger.ts';
import { type InProcessScheduler, startScheduler } from '../orchestrator/in-process-scheduler.ts';
import { FIXTURE_RANK, runOrch } from '../orchestrator/orch-cluster.ts';
import { readEvents } from '../utils/events.ts';
import { client, freshPrefix } from '../utils/redis.ts';
import { waitFor } from '../utils/wait-for.ts';

/** Why the Slurm tests cannot run here, or null: they need the daemons .ci/slurm-up starts. */
export function slurmMissing(): string | null {
  const r = spawnSync('sinfo', ['-h', '-o', '%T'], { encoding: 'utf8' });
  if (r.error) return 'sinfo is not on PATH: run .ci/slurm-up (as root) to install and start a single-node Slurm';
  if (r.status !== 0 || !/idle|mixed|allocated/.test(r.stdout))
    return `sinfo shows no usable node (${(r.stderr || r.stdout).trim()}): run .ci/slurm-up`;
  return null;
}

export interface SlurmWorld {
  srv: RedisServerProcess;
  redis: Redis;
  prefix: string;
  dir: string;
  sched: InProcessScheduler;
  env: Record<string, string>;
  /** `orch slurm up` with the fixture rank (or `graphrt`, with `env` for the job), on `nodes` nodes of `partition` (default 1, the default partition); returns the job id */
  up(opts: {
    gpus: number;
    time: string;
    repMs: number;
    drainS?: number;
    graphrt?: string;
    env?: Record<string, string>;
    nodes?: number;
    partition?: string;
  }): Promise<string>;
  orch(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** the hosts of `job` once its workers registered `cards` cards in all */
  registered(job: string, cards: number): Promise<HostInfo[]>;
  stop(): Promise<void>;
}

export async function startSlurmWorld(): Promise<SlurmWorld> {
  const srv = await startRedisServer();
  const redis = client(srv.url);
  const prefix = freshPrefix('slurm');
  const dir = mkdtempSync(join(tmpdir(), 'orch-slurm-'));
  const sched = await startScheduler({ url: srv.url, prefix, grantTtlMs: 3000, safetyPollMs: 300 });
  const env = { REDIS_URL: srv.url, ORCH_PREFIX: prefix, ORCH_LOG: process.env.ORCH_TEST_LOG ?? 'warn' };
  const jobs: string[] = [];
  const orch = (args: string[]) => runOrch(['slurm', ...args, '--run-dir', join(dir, 'runs')], env);
  return {
    srv,
    redis,
    prefix,
    dir,
    sched,
    env,
    orch,
    async up({ gpus, time, repMs, drainS = 0, graphrt = FIXTURE_RANK, env: jobEnv = {}, nodes = 1, partition }) {
      const r = await runOrch(
        [
          'slurm',
          'up',
          '--nodes',
          String(nodes),
          ...(partition ? ['--partition', partition] : []),
          '--gpus-per-node',
          String(gpus),
          '--time',
          time,
          '--drain-before-end',
          String(drainS),
          '--run-dir',
          join(dir, 'runs'),
          '--json',
          `--worker-arg=--graphrt=${graphrt}`,
          '--worker-arg=--heartbeat-ms=500',
          `--worker-arg=--lock-dir=${join(dir, `locks-${jobs.length}`)}`,
        ],
        { ...env, ...jobEnv, FIXTURE_REP_MS: String(repMs) },
      );
      if (r.code !== 0) throw new Error(`orch slurm up exited ${r.code}: ${r.stdout}${r.stderr}`);
      const job = (JSON.parse(r.stdout) as { job: string }).job;
      jobs.push(job);
      return job;
    },
    async registered(job, cards) {
      const registry = new CardRegistry(redis, { prefix });
      return waitFor(
        `the workers of job ${job} registered ${cards} card(s)`,
        async () => {
          const hosts = [...new Set((await registry.liveCards()).map((c) => c.host))];
          const infos = (await Promise.all(hosts.map((h) => registry.hostInfo(h)))).filter(
            (h) => h.slurm?.job === job && h.alive,
          );
          return infos.reduce((n, h) => n + h.cards.length, 0) === cards ? infos : null;
        },
        { timeoutMs: 60_000, intervalMs: 200 },
      );
    },
    async stop() {
      for (const job of jobs) spawnSync('scancel', [job]);
      await waitFor(
        'the jobs left Slurm',
        () =>
          jobs.every(
            (j) =>
              !/RUNNING|COMPLETING|PENDING/.test(
                spawnSync('squeue', ['-h', '-j', j, '-o', '%T'], { encoding: 'utf8' }).stdout,
              ),
          ),
        { timeoutMs: 60_000, intervalMs: 250 },
      ).catch(() => undefined);
      await sched.stop();
      redis.disconnect();
      await srv.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The chaos table's row for an ended experiment: every planned rep measured once or failed with a reason. */
export async function ledger(w: SlurmWorld, id: string, fault: string): Promise<LedgerRow & { unaccounted: string[] }> {
  const exp = await new ExperimentStore(w.redis, w.prefix).get(id);
  if (!exp) throw new Error(`experiment ${id} is gone`);
  const results = new ResultStore(w.redis, { prefix: w.prefix });
  const committed = await results.results(id);
  const measured = new Set(Object.keys(committed));
  const failed = await results.failed(id);
  const states = await new ExperimentStore(w.redis, w.prefix).blocks(id);
  const fields = exp.plan.blocks.flatMap((b) => plannedReps(exp.plan, b.index).map(repKey));
  const audit = auditReps(await readEvents(w.redis, w.prefix, id), Object.values(committed), new Map());
  const twice =
    fields.filter((f) => measured.has(f) && f in failed).length +
    states.reduce((n, b) => n + Math.max(0, b.attempts.filter((a) => a.outcome === 'committed').length - 1), 0) +
    audit.twice;
  const withReason = fields.filter((f) => !measured.has(f) && (failed[f]?.reason ?? '') !== '');
  const reasons = [...new Set(withReason.map((f) => failed[f]!.reason.replace(/\s+/g, ' ').slice(0, 90)))].join(' / ');
  const row = {
    fault,
    planned: fields.length,
    measured: fields.filter((f) => measured.has(f)).length,
    failed: withReason.length,
    reasons,
    twice,
  };
  console.log(
    `# slurm: | ${row.fault} | ${row.planned} | ${row.measured} | ${row.failed}${row.reasons ? ` (${row.reasons})` : ''} | ${row.twice} |${audit.detail.length ? ` ${audit.detail.slice(0, 3).join('; ')}` : ''}`,
  );
  return { ...row, unaccounted: fields.filter((f) => !measured.has(f) && !withReason.includes(f)) };
}
