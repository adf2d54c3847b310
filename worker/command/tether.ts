/**
 * Starting a child fate-shared with this worker (worker/command/tether.sh has the contract): the
 * child leads its own process group, its stdin is a pipe this process holds open and never
 * writes, and when the pipe closes — normal exit or kill -9 of the worker — the group is
 * SIGKILLed by the script's watcher. Used for rep processes and for builds.
 *
 * The process ends when its command exits, not when its pipes close: what is left of the group
 * then (a child it forked that keeps stdout open) is SIGKILLed, and a pipe still open after
 * STDIO_GRACE_MS (held by a child that left the group with setsid) is closed from this side. A
 * deadline or a cancel that kills the group thus ends the process in bounded time, whatever the
 * pipe does.
 */
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { STDIO_GRACE_MS } from '../rank-protocol.ts';

export const TETHER_SCRIPT = fileURLToPath(new URL('./tether.sh', import.meta.url));

export interface TetheredProcess {
  child: ChildProcess;
  /** Resolves with the exit code (or 128 + signal number's name) once the child has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL to the whole process group. */
  killGroup(): void;
}

export function spawnTethered(
  file: string,
  args: string[],
  opts: Omit<SpawnOptions, 'detached' | 'stdio'> & { stdout?: 'pipe' | number; stderr?: 'pipe' | number },
): TetheredProcess {
  const { stdout = 'pipe', stderr = 'pipe', ...rest } = opts;
  const child = spawn('/bin/sh', [TETHER_SCRIPT, file, ...args], {
    ...rest,
    detached: true,
    stdio: ['pipe', stdout, stderr],
  });
  // The tether: never written, closed by the kernel when this process dies.
  child.stdin?.on('error', () => {});
  const killGroup = () => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
  child.once('exit', () => {
    killGroup();
    setTimeout(() => {
      child.stdout?.destroy();
      child.stderr?.destroy();
    }, STDIO_GRACE_MS).unref();
  });
  return { child, exited, killGroup };
}
