/**
 * orch's Lua scripts (orchestrator/redis/lua/*.lua), defined once per ioredis connection with
 * `defineCommand` (EVALSHA with a transparent EVAL fallback). Every atomic state change of
 * leases and block results goes through one of these, never read-then-write from TypeScript.
 */
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

export const SCRIPT_NAMES = ['acquire-gang', 'renew-gang', 'release-gang', 'revoke-gang', 'commit-block', 'fail-block'] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

const LUA_DIR = new URL('./lua/', import.meta.url);
const sources = new Map<ScriptName, string>();

function commandName(name: ScriptName): string {
  return `orch_${name.replace(/-/g, '_')}`;
}

function source(name: ScriptName): string {
  let lua = sources.get(name);
  if (lua === undefined) {
    lua = readFileSync(new URL(`${name}.lua`, LUA_DIR), 'utf8');
    sources.set(name, lua);
  }
  return lua;
}

/**
 * Runs script `name` with a variable number of keys. Defines it on `redis` the first time.
 * Returns the raw Lua reply.
 */
export async function runScript(redis: Redis, name: ScriptName, keys: string[], args: (string | number)[]): Promise<unknown> {
  const cmd = commandName(name);
  const r = redis as unknown as Record<string, (...a: (string | number)[]) => Promise<unknown>>;
  if (typeof r[cmd] !== 'function') redis.defineCommand(cmd, { lua: source(name) });
  return (r[cmd] as (...a: (string | number)[]) => Promise<unknown>).call(redis, keys.length, ...keys, ...args);
}
