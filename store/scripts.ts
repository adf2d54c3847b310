/**
 * orch's Lua scripts: every `store/lua/<name>.lua`, loaded one way, defined once per ioredis
 * connection with `defineCommand` (EVALSHA with a transparent EVAL fallback). Every atomic
 * state change goes through one of these, never read-then-write from TypeScript.
 *
 * Each script opens with a `--[[ ... ]]` header that names its KEYS, its ARGV and what it
 * returns (bullmq's src/commands/*.lua convention); the loader refuses a script without one.
 * A line `--@include <name>` is replaced by `store/lua/include/<name>.lua`, so a check shared by
 * several scripts (the lease fence) is written once.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

const LUA_DIR = new URL('./lua/', import.meta.url);
const INCLUDE_DIR = new URL('./lua/include/', import.meta.url);
const INCLUDE_LINE = /^--@include ([a-z0-9-]+)\s*$/gm;

/** Every script name: the `.lua` files of store/lua/ (not include/). */
export const SCRIPT_NAMES: readonly string[] = readdirSync(LUA_DIR)
  .filter((f) => f.endsWith('.lua'))
  .map((f) => f.slice(0, -'.lua'.length))
  .sort();

const sources = new Map<string, string>();

/** The header's contract, checked at load: a script that does not state it is not loaded. */
export function checkHeader(name: string, lua: string): void {
  const header = /^--\[\[([\s\S]*?)\]\]/.exec(lua)?.[1];
  if (header === undefined)
    throw new Error(`store/lua/${name}.lua: no --[[ ]] header (KEYS, ARGV and what it returns)`);
  for (const word of ['KEYS', 'ARGV', 'Returns']) {
    if (!new RegExp(`\\b${word}\\b`, 'i').test(header))
      throw new Error(`store/lua/${name}.lua: its header does not name ${word}`);
  }
}

/** The script's source with its includes expanded. */
export function scriptSource(name: string): string {
  let lua = sources.get(name);
  if (lua === undefined) {
    if (!SCRIPT_NAMES.includes(name))
      throw new Error(`no Lua script store/lua/${name}.lua (have: ${SCRIPT_NAMES.join(', ')})`);
    const raw = readFileSync(new URL(`${name}.lua`, LUA_DIR), 'utf8');
    checkHeader(name, raw);
    lua = raw.replace(INCLUDE_LINE, (_, inc: string) => readFileSync(new URL(`${inc}.lua`, INCLUDE_DIR), 'utf8'));
    sources.set(name, lua);
  }
  return lua;
}

export function commandName(name: string): string {
  return `orch_${name.replace(/-/g, '_')}`;
}

/**
 * Defines every script on `redis` now, not at its first use: an auto-pipelining connection
 * (connect.ts `autoPipelining`) copies the commands defined when each pipeline is made, and a
 * script defined after that is missing from it (ioredis then answers the pipeline short).
 */
export function defineAllScripts(redis: Redis): void {
  const r = redis as unknown as Record<string, unknown>;
  for (const name of SCRIPT_NAMES)
    if (typeof r[commandName(name)] !== 'function') redis.defineCommand(commandName(name), { lua: scriptSource(name) });
}

/**
 * Runs script `name` with a variable number of keys. Defines it on `redis` the first time.
 * Returns the raw Lua reply.
 */
export async function runScript(
  redis: Redis,
  name: string,
  keys: string[],
  args: (string | number)[],
): Promise<unknown> {
  const cmd = commandName(name);
  const r = redis as unknown as Record<string, (...a: (string | number)[]) => Promise<unknown>>;
  if (typeof r[cmd] !== 'function') redis.defineCommand(cmd, { lua: scriptSource(name) });
  return (r[cmd] as (...a: (string | number)[]) => Promise<unknown>).call(redis, keys.length, ...keys, ...args);
}
