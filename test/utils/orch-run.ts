/** Runs `orch <args>` (bin/orch.mjs) as a real process and collects its exit code and output. */
import { spawn } from 'node:child_process';
import { ORCH_BIN } from './worker-process.ts';

export interface OrchRun {
  code: number | null;
  stdout: string;
  output: string;
}

export async function runOrch(args: string[], env: Record<string, string> = {}, cwd?: string): Promise<OrchRun> {
  const child = spawn(process.execPath, [ORCH_BIN, ...args], {
    env: { ...process.env, ORCH_LOG: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(cwd ? { cwd } : {}),
  });
  let stdout = '';
  let output = '';
  child.stdout!.on('data', (d: Buffer) => {
    stdout += d.toString();
    output += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    output += d.toString();
  });
  const code = await new Promise<number | null>((r) => child.once('close', r));
  return { code, stdout, output };
}
