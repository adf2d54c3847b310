/**
 * How the worker starts a resident rank process, whatever it runs (graphrt serve, a user's
 * program through a rank library):
 * - fate-shared with the worker: where util-linux `setpriv` exists, PR_SET_PDEATHSIG=SIGKILL, so a
 *   worker killed with -9 takes its ranks with it even in the middle of a long rep (stdin closing
 *   ends them otherwise). A user's program (spawnRank) is tethered as a whole process group
 *   besides (rank-tether.sh): the death signal reaches one process, and a child the program
 *   forked (a `sh -c` wrapper's program, a data loader, a daemon) would live on;
 * - SIGTERM ignored: a SIGTERM meant for the worker reaches every process of a Slurm job step
 *   (slurmstepd signals them all, scancel or the time limit) or of a systemd unit; the worker
 *   drains on it (the rep in flight finishes, the rest of the block is handed back), which it
 *   cannot do once the ranks are dead. The ranks end as the worker says: stdin closed, or SIGKILL
 *   (the worker's kill, the death signal, Slurm's KillWait). Ignored, not handled, so it survives
 *   the exec into the program (a handler would not); a program that resets every disposition at
 *   start (Node does) still dies of it, and the worker then says who sent it (rank-runner.ts);
 * - the card's lock: the worker opens the card's lock file (one open file description) and
 *   locks it with flock(1) on that description (lockDescription). graphrt's processes get it as
 *   fd INHERITED_LOCK_FD and hold it together; a user's program never gets it — the worker holds
 *   it on its own descriptor for the program's life, so a child the program left behind (or
 *   that escaped its group with setsid) cannot keep the card from the next attempt: the kernel
 *   drops the lock with the worker's descriptor, at the rank's end or the worker's death.
 *
 * Every helper (setpriv, flock) runs by the absolute path resolved from the worker's own PATH
 * (helper-paths.ts), never the program environment's.
 */
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { OrchError } from '../jobs/errors.ts';
import { helperPath, requireHelper } from './helper-paths.ts';
import { asUser, type RunAs, userFlags } from './run-as.ts';

/** The fd a rank process inherits the card's lock on (the first after stdio). */
export const INHERITED_LOCK_FD = 3;
/** flock(1)'s exit code when the card's lock is held by another description (-E). */
export const LOCK_BUSY_EXIT = 4;

/** rank-tether.sh: a user's program's group dies when the worker's end of fd TETHER_FD closes. */
export const RANK_TETHER_SCRIPT = fileURLToPath(new URL('./rank-tether.sh', import.meta.url));
const TETHER_FD = 3;

let setprivChecked: string | null | undefined;
/** setpriv's absolute path when it runs with --pdeathsig here, else null. */
function setpriv(): string | null {
  if (setprivChecked === undefined) {
    const file = helperPath('setpriv');
    const r = file === null ? null : spawnSync(file, ['--pdeathsig', 'KILL', '--', '/bin/true'], { stdio: 'ignore' });
    setprivChecked = r !== null && !r.error && r.status === 0 ? file : null;
  }
  return setprivChecked;
}

/** `$0` execs the program with SIGTERM ignored: an ignored disposition survives exec. */
const IGNORING_TERM = ['/bin/sh', '-c', 'trap "" TERM; exec "$0" "$@"'] as const;

/**
 * `file argv` with SIGTERM ignored, under setpriv's death signal where it exists, as `runAs` when
 * given (one setpriv: it sets the death signal after the change of user, which would clear it);
 * `warn` is told when setpriv is missing.
 */
export function fateShared(
  file: string,
  argv: string[],
  warn: (msg: string) => void,
  runAs: RunAs | null = null,
): [string, string[]] {
  const run = [...IGNORING_TERM, file, ...argv];
  const sp = setpriv();
  if (sp !== null) return [sp, [...userFlags(runAs), '--pdeathsig', 'KILL', '--', ...run]];
  if (runAs !== null) {
    const [exe, ...rest] = asUser(runAs, run);
    return [exe!, rest];
  }
  warn('setpriv not found: ranks exit when their stdin closes, not on the worker death signal');
  return [run[0]!, run.slice(1)];
}

/**
 * A user's program as a resident rank: `/bin/sh -c cmd` leading its own process group, tethered
 * (rank-tether.sh) on fd 3, under setpriv's death signal where it exists, as `runAs` when given
 * (run-as.ts); stdio is the protocol's.
 * No other descriptor reaches it (the card's lock stays the worker's). `endGroup` SIGKILLs what is
 * left of the group and closes the tether: call it once the rank has exited (a child the program
 * forked dies with it, whatever it holds).
 */
export function spawnRank(
  cmd: string,
  opts: { cwd: string; env: Record<string, string>; warn: (msg: string) => void; runAs?: RunAs | null },
): { child: ChildProcessWithoutNullStreams; endGroup: () => void } {
  // as another user: the tether's watcher stays the worker's, so it can kill the whole group
  const run = ['/bin/sh', RANK_TETHER_SCRIPT, ...asUser(opts.runAs ?? null, ['/bin/sh', '-c', cmd])];
  const sp = setpriv();
  if (sp === null) opts.warn('setpriv not found: a rank dies with its worker through its group tether only');
  const [file, argv] = sp === null ? [run[0]!, run.slice(1)] : [sp, ['--pdeathsig', 'KILL', '--', ...run]];
  const child = spawn(file, argv, {
    cwd: opts.cwd,
    env: opts.env,
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
  }) as ChildProcessWithoutNullStreams;
  const tether = child.stdio[TETHER_FD] as Writable;
  tether.on('error', () => {});
  const endGroup = () => {
    if (child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group is gone
      }
    }
    tether.destroy();
  };
  return { child, endGroup };
}

/**
 * flock(LOCK_EX|LOCK_NB) on the worker's open file description of the card's lock, by flock(1)
 * on the inherited fd (Node has no flock): exit 0 locked, LOCK_BUSY_EXIT when another description
 * holds it. The lock stays on the description after flock(1) exits.
 */
export function lockDescription(fd: number, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let flock: string;
    try {
      flock = requireHelper('flock', `it takes the card lock ${path}`);
    } catch (err) {
      return reject(err);
    }
    const child = spawn(flock, ['-n', '-E', String(LOCK_BUSY_EXIT), String(INHERITED_LOCK_FD)], {
      stdio: ['ignore', 'ignore', 'pipe', fd],
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-500)));
    child.once('error', (err) =>
      reject(
        new OrchError('CARD_LOCK_HANDOFF', `cannot run flock(1) to take the card lock ${path}: ${err.message}`, {
          cause: err,
        }),
      ),
    );
    child.once('close', (code) => {
      if (code === 0) resolve();
      else if (code === LOCK_BUSY_EXIT)
        reject(new OrchError('CARD_BUSY', `card lock ${path}: held by another process; one rank per card`));
      else
        reject(
          new OrchError('CARD_LOCK_HANDOFF', `flock(1) on the card lock ${path} exited ${code}: ${stderr.trim()}`),
        );
    });
  });
}

/**
 * The live processes of process group `pgid` (a rank leads its own): the program a shell started,
 * its workers. The foreign-process guard must see every one of them as the rank's, not only the
 * group's leader (the GPU's user is often the shell's child).
 */
export function processGroupPids(pgid: number): number[] {
  const out: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [pgid];
  }
  for (const d of entries) {
    if (!/^\d+$/.test(d)) continue;
    try {
      // /proc/<pid>/stat: "pid (comm) state ppid pgrp ..."; comm may hold spaces and parentheses
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid) out.push(Number(d));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out.includes(pgid) || out.length > 0 ? out : [pgid];
}
