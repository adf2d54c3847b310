import { spawnSync } from 'node:child_process';

export interface OrchRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real CLI (`node bin/orch.mjs …`) from the repository root; `env` is laid over this process's. */
export function runOrch(args: string[], env: Record<string, string> = {}): OrchRun {
  const r = spawnSync(process.execPath, ['bin/orch.mjs', ...args], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, ...env } });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A stack frame line (`    at fn (file:1:2)`): never shown for a user's mistake. */
export const STACK_FRAME = /^\s+at .+[:(]/m;
