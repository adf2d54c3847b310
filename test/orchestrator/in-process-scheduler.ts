/**
 * The production Scheduler, started in the test process against a real redis-server, with its
 * log kept for assertions, and experiments submitted through the production submit path.
 */
import '../utils/cluster-secret.ts';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { submitExperiment } from '../../orchestrator/experiment/submit.ts';
import { Scheduler, type SchedulerOptions } from '../../orchestrator/scheduler/scheduler.ts';
import { loadSpec } from '../../orchestrator/spec/load-spec.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { waitFor } from '../utils/wait-for.ts';

export interface InProcessScheduler {
  scheduler: Scheduler;
  /** the scheduler's log lines so far, parsed */
  log(): { msg: string; [k: string]: unknown }[];
  stop(): Promise<void>;
}

export async function startScheduler(o: Omit<SchedulerOptions, 'log'>): Promise<InProcessScheduler> {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  const scheduler = new Scheduler({ ...o, log: pino({ level: 'debug' }, sink) });
  scheduler.start();
  await waitFor('the scheduler leads', () => scheduler.isLeader, { timeoutMs: 20_000 });
  return {
    scheduler,
    log: () => lines.map((l) => JSON.parse(l) as { msg: string }),
    stop: () => scheduler.stop(),
  };
}

/** Writes `yaml` to `dir`, submits it, and returns the experiment id. */
export async function submitYaml(
  redis: Redis,
  prefix: string,
  dir: string,
  name: string,
  yaml: string,
): Promise<string> {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, yaml);
  const { id } = await submitExperiment({ redis, prefix, loaded: loadSpec(file) });
  return id;
}

/** One-rank A/B blocks of the fixture workload. */
export function abSpec(name: string, blocks: number, reps: number): string {
  return [
    `name: ${name}`,
    'design: ab',
    'workload: { runtime: native, backend: auto, kind: chain, params: { kernels: 4 }, warmup: 1, steps: 2 }',
    'toggles: [graph]',
    'arms:',
    '  - { name: A, toggles: {} }',
    '  - { name: B, toggles: { graph: true } }',
    `reps: ${reps}`,
    `blocks: { count: ${blocks}, ranks: 1 }`,
    'gates: { identity: false }',
    'metric: { name: ms_per_step, better: lower }',
    '',
  ].join('\n');
}

export async function waitEnded(redis: Redis, prefix: string, id: string, timeoutMs: number): Promise<string> {
  const store = new ExperimentStore(redis, prefix);
  return waitFor(
    `experiment ${id} ended`,
    async () => {
      const s = await store.state(id);
      return s === 'done' || s === 'failed' || s === 'cancelled' ? s : null;
    },
    { timeoutMs, intervalMs: 50 },
  );
}
