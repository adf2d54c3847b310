/**
 * The shared setup of worker tests, registered as hooks of the calling `describe`: a private
 * redis-server, a client, a temporary directory (lock dir inside), and `spawn` for real worker
 * processes that are all SIGKILLed in `after` (cleanup even when a test fails half-way).
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import type { Redis } from 'ioredis';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';
import { client } from './redis.ts';
import { spawnWorker, type WorkerProcess, type WorkerSpawnOptions } from './worker-process.ts';

export interface WorkerTestEnv {
  server: RedisServerProcess;
  redis: Redis;
  dir: string;
  lockDir: string;
  /** a worker on this env's Redis and lock dir */
  spawn(o: Omit<WorkerSpawnOptions, 'redisUrl' | 'lockDir'> & { redisUrl?: string }): Promise<WorkerProcess>;
}

export function useWorkerEnv(tag: string): WorkerTestEnv {
  const workers: WorkerProcess[] = [];
  const env = {
    spawn: async (o: Omit<WorkerSpawnOptions, 'redisUrl' | 'lockDir'> & { redisUrl?: string }) => {
      const w = await spawnWorker({ redisUrl: env.server.url, lockDir: env.lockDir, ...o });
      workers.push(w);
      return w;
    },
  } as WorkerTestEnv;
  before(async () => {
    env.server = await startRedisServer();
    env.redis = client(env.server.url);
    env.dir = mkdtempSync(join(tmpdir(), `orch-${tag}-`));
    env.lockDir = join(env.dir, 'locks');
  });
  after(async () => {
    for (const w of workers) w.kill();
    await Promise.all(workers.map((w) => w.exited));
    env.redis.disconnect();
    await env.server.stop();
    rmSync(env.dir, { recursive: true, force: true });
  });
  return env;
}
