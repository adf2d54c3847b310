/**
 * The host's build lock: a kernel flock(2) on `<build dir>/.build.lock`, held by a util-linux
 * flock(1) process (Node has no flock binding). The holder is
 *
 *     flock -o <file> /bin/sh -c 'echo locked; exec cat >/dev/null'
 *
 * with its stdin a pipe from this process: `locked` on stdout means the lock is ours; closing
 * the pipe (release(), or the kernel closing it because this process died, kill -9 included)
 * ends `cat`, flock(1) exits and the kernel drops the lock at once. `-o` keeps the lock fd out
 * of the shell, so nothing the holder starts can inherit the lock.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { OrchError } from '../../jobs/errors.ts';
import { helper } from '../helper-paths.ts';

export interface HeldBuildLock {
  /** pid of the flock(1) process that holds the lock. */
  holderPid: number;
  release(): Promise<void>;
}

export async function acquireBuildLock(lockFile: string): Promise<HeldBuildLock> {
  const child: ChildProcess = spawn(
    helper('flock'),
    ['-o', lockFile, '/bin/sh', '-c', 'echo locked; exec cat >/dev/null'],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  child.stdin!.on('error', () => {});
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    child.once('error', (err) =>
      reject(
        new OrchError('BUILD_LOCK_FAILED', `cannot run flock(1) for ${lockFile}: ${err.message}`, {
          cause: err,
          hint: 'install util-linux',
        }),
      ),
    );
    rl.once('line', (line) => {
      rl.close();
      if (line === 'locked') resolve();
      else reject(new OrchError('BUILD_LOCK_FAILED', `flock(1) on ${lockFile} said "${line}"`));
    });
    void exited.then((code) =>
      reject(
        new OrchError(
          'BUILD_LOCK_FAILED',
          `flock(1) on ${lockFile} exited ${code} before taking the lock: ${stderr.trim()}`,
        ),
      ),
    );
  });
  let released: Promise<void> | null = null;
  return {
    holderPid: child.pid!,
    release() {
      released ??= (async () => {
        child.stdin!.end();
        await exited;
      })();
      return released;
    },
  };
}
