/**
 * A real redis-server per test file (startRedisServer) and a fresh key prefix per test, so tests
 * never share state; clients are closed in `after` hooks by the caller.
 */
import './cluster-secret.ts';
import { randomBytes } from 'node:crypto';
import { after, before } from 'node:test';
import { Redis } from 'ioredis';
import { type RedisServerProcess, startRedisServer } from '../../store/redis-server-process.ts';

export function freshPrefix(tag = 't'): string {
  return `${tag}${randomBytes(4).toString('hex')}`;
}

export function client(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null });
}

/**
 * A private redis-server for the test file that calls this at its top level (started before its
 * tests, stopped after) and a client on it; read `.redis` and `.server` inside the tests.
 */
export function privateRedis(): { readonly redis: Redis; readonly server: RedisServerProcess } {
  let server: RedisServerProcess | null = null;
  let redis: Redis | null = null;
  before(async () => {
    server = await startRedisServer();
    redis = client(server.url);
  });
  after(async () => {
    redis?.disconnect();
    await server?.stop();
  });
  return {
    get redis() {
      if (!redis) throw new Error('privateRedis: read .redis inside a test');
      return redis;
    },
    get server() {
      if (!server) throw new Error('privateRedis: read .server inside a test');
      return server;
    },
  };
}
