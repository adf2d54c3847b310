/**
 * A real redis-server per test file (startRedisServer) and a fresh key prefix per test, so tests
 * never share state; clients are closed in `after` hooks by the caller.
 */
import './cluster-secret.ts';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

export function freshPrefix(tag = 't'): string {
  return `${tag}${randomBytes(4).toString('hex')}`;
}

export function client(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null });
}
