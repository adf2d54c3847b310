/**
 * The user a worker runs its users' programs and builds as (`orch worker --run-as USER`): an unprivileged
 * account that owns nothing of the worker's, so a program can read neither the worker's secret
 * files (0600, the worker's user) nor its /proc/<pid>/environ or memory (another user's). Only
 * root can switch user; the switch is util-linux setpriv(1) by its absolute path
 * (helper-paths.ts), wrapped around the program alone: flock(1), the tether and the card's lock
 * stay the worker's.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { UserInputError } from '../jobs/errors.ts';
import { lookUp, requireHelper } from './helper-paths.ts';

/** The default run-as user of a worker that runs as root and runs users' programs. */
export const DEFAULT_RUN_AS = 'orch-run';

/** `--run-as none` (cluster config `run_as: none`): the programs run as the worker's own user. */
export const RUN_AS_NONE = 'none';

/**
 * The user a worker runs its users' code as: the one `--run-as` names, `none` for the worker's
 * own, and by default `orch-run` for a root worker that runs users' code (--allow-command, or
 * --allow-build: a commit's recipe and its graphrt; run as root they could read every secret of
 * the host), the worker's own user otherwise (only root can switch). `selfAsRoot` is the warning
 * a root worker logs when that code stays root.
 */
export function chooseRunAs(
  flag: string | undefined,
  worker: { root: boolean; runsUsersCode: boolean },
): { user: string | null; selfAsRoot: string | null } {
  const asRoot = worker.root && worker.runsUsersCode;
  const user = flag === RUN_AS_NONE ? null : (flag ?? (asRoot ? DEFAULT_RUN_AS : null));
  const selfAsRoot =
    user === null && asRoot
      ? `--run-as ${RUN_AS_NONE}: users' programs and builds run as root and can read every file of this host, the worker's secret file included; leave --run-as out to run them as ${DEFAULT_RUN_AS}`
      : null;
  return { user, selfAsRoot };
}

export interface RunAs {
  user: string;
  uid: number;
  gid: number;
  home: string;
}

/** The passwd entry of `user`, or null (getent(1), so NSS users count). */
function passwd(user: string): RunAs | null {
  const getent = lookUp('getent');
  if (getent === null) return null;
  const r = spawnSync(getent, ['passwd', user], { encoding: 'utf8' });
  const f = r.status === 0 ? r.stdout.trim().split('\n')[0]?.split(':') : undefined;
  if (f === undefined || f.length < 7) return null;
  return { user, uid: Number(f[2]), gid: Number(f[3]), home: f[5] ?? '/' };
}

/** The lock orch's useradd runs under; in /run, which only root may write (not /run/lock, 1777). */
const USERADD_LOCK = '/run/orch-useradd.lock';

/** How long a user another process is creating may take to appear. */
const LATE_USER_MS = 5000;

/** `user`'s passwd entry once it appears, polled for up to `ms`; null if it does not. */
function awaitUser(user: string, ms: number): RunAs | null {
  const until = Date.now() + ms;
  for (;;) {
    const found = passwd(user);
    if (found !== null || Date.now() >= until) return found;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
  }
}

/**
 * `user`'s ids; a missing one is created (useradd --system, no home, no login shell) when
 * `create`, and `log` says so. Refused: not root, root itself, a malformed name.
 */
export function resolveRunAs(user: string, opts: { create: boolean; log: (msg: string) => void }): RunAs {
  if (!/^[a-z_][a-z0-9_-]{0,31}$/.test(user))
    throw new UserInputError('CLI_USAGE', `--run-as ${user}: not a user name`);
  if (process.getuid?.() !== 0)
    throw new UserInputError(
      'CLI_USAGE',
      `--run-as ${user}: only a worker running as root can run programs as another user`,
      { hint: 'leave --run-as out, or start orch worker as root' },
    );
  let found = passwd(user);
  if (found === null && opts.create) {
    const useradd = lookUp('useradd', '/usr/sbin:/usr/bin:/sbin:/bin');
    const add = [
      '--system',
      '--no-create-home',
      '--home-dir',
      '/nonexistent',
      '--shell',
      '/usr/sbin/nologin',
      '--user-group',
      user,
    ];
    // one useradd at a time among orch processes: two at once may both succeed, each writing
    // /etc/passwd with the uid it picked, and leave the user with a uid one of them never saw
    const flock = existsSync(dirname(USERADD_LOCK)) ? lookUp('flock') : null;
    const r =
      useradd === null
        ? null
        : flock === null
          ? spawnSync(useradd, add, { encoding: 'utf8' })
          : spawnSync(flock, ['-w', '30', USERADD_LOCK, useradd, ...add], { encoding: 'utf8' });
    // another orch process creating the same user meanwhile (useradd: "already exists", or its
    // lock on /etc/passwd taken) is no failure: the user appears once that one is done
    if (r !== null && r.status !== 0) found = awaitUser(user, LATE_USER_MS);
    if (r === null || (r.status !== 0 && found === null))
      throw new UserInputError(
        'CLI_USAGE',
        `--run-as ${user}: the user does not exist and useradd failed: ${r === null ? 'useradd not found' : r.stderr.trim()}`,
        { hint: `create it yourself: useradd --system --user-group ${user}` },
      );
    if (found === null) {
      opts.log(`created the system user ${user} (useradd) to run users' programs as`);
      found = passwd(user);
    }
  }
  if (found === null)
    throw new UserInputError('CLI_USAGE', `--run-as ${user}: no such user`, {
      hint: `create it: useradd --system --user-group ${user}`,
    });
  if (found.uid === 0)
    throw new UserInputError('CLI_USAGE', `--run-as ${user}: uid 0 is root; the point is another user`);
  return found;
}

/** `file argv` as `runAs` (setpriv: real and effective ids, no supplementary group), or as is when null. */
export function asUser(runAs: RunAs | null, argv: string[]): string[] {
  if (runAs === null) return argv;
  return [requireHelper('setpriv', `it runs programs as ${runAs.user}`), ...userFlags(runAs), '--', ...argv];
}

/** setpriv(1)'s flags that switch to `runAs`: real and effective ids, no supplementary group; none when null. */
export function userFlags(runAs: RunAs | null): string[] {
  return runAs === null ? [] : [`--reuid=${runAs.uid}`, `--regid=${runAs.gid}`, '--clear-groups'];
}

/** The variables that name the program's user: its own, not the worker's (HOME would be root's). */
export function runAsEnv(runAs: RunAs | null): Record<string, string> {
  return runAs === null ? {} : { HOME: runAs.home, USER: runAs.user, LOGNAME: runAs.user };
}
