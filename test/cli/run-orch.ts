import { spawnSync } from 'node:child_process';

export interface OrchRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real CLI (`node bin/orch.mjs …`) from the repository root; `env` is laid over this
 * process's. Past `timeoutMs` it is killed and `status` is null.
 */
export function runOrch(args: string[], env: Record<string, string> = {}, timeoutMs = 120_000): OrchRun {
  const r = spawnSync(process.execPath, ['bin/orch.mjs', ...args], {
    encoding: 'utf8',
    timeout: timeoutMs,
    env: { ...process.env, ...env },
  });
  if (r.error && (r.error as NodeJS.ErrnoException).code !== 'ETIMEDOUT') throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A stack frame line (`    at fn (file:1:2)`): never shown for a user's mistake. */
export const STACK_FRAME = /^\s+at .+[:(]/m;
