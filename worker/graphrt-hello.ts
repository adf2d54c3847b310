/**
 * Runs `graphrt hello` (the args and env from jobs/native-args.ts) and returns what it printed:
 * the worker's one way to ask a binary what it is, for preflight and for a built commit alike.
 */
import { execFile } from 'node:child_process';
import { toNativeHello } from '../jobs/native-args.ts';
import { asUser, type RunAs, runAsEnv } from './run-as.ts';

export interface HelloRun {
  /** the exit code; 127 when it could not be started or was killed */
  code: number;
  stdout: string;
  stderr: string;
}

/** Bounded: a binary that hangs is killed after a minute (its hello is an instant answer). */
const HELLO_TIMEOUT_MS = 60_000;

/** `env` is the base environment the binary sees (default: this process's); the backend's own variables go on top. */
export function runHello(
  binary: string,
  backend: 'auto' | 'cuda' | 'cpu',
  env: NodeJS.ProcessEnv = process.env,
  runAs: RunAs | null = null,
): Promise<HelloRun> {
  const hello = toNativeHello(backend);
  // a build's graphrt is a user's program: as the run-as user (worker/run-as.ts) when there is one
  const [exe, ...args] = asUser(runAs, [binary, ...hello.args]);
  return new Promise((resolve) => {
    execFile(
      exe!,
      args,
      { timeout: HELLO_TIMEOUT_MS, env: { ...env, ...hello.env, ...runAsEnv(runAs) } },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 127) : 0, stdout, stderr });
      },
    );
  });
}
