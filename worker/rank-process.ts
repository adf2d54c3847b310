/**
 * How the worker starts a resident rank process, whatever it runs (graphrt serve, a user's
 * program through a rank library):
 * - fate-shared with the worker: where util-linux `setpriv` exists, PR_SET_PDEATHSIG=SIGKILL, so a
 *   worker killed with -9 takes its ranks with it even in the middle of a long rep (stdin closing
 *   ends them otherwise);
 * - SIGTERM ignored: a SIGTERM meant for the worker reaches every process of a Slurm job step
 *   (slurmstepd signals them all, scancel or the time limit) or of a systemd unit; the worker
 *   drains on it (the rep in flight finishes, the rest of the block is handed back), which it
 *   cannot do once the ranks are dead. The ranks end as the worker says: stdin closed, or SIGKILL
 *   (the worker's kill, the death signal, Slurm's KillWait). Ignored, not handled, so it survives
 *   the exec into the program (a handler would not); a program that resets every disposition at
 *   start (Node does) still dies of it, and the worker then says who sent it (rank-runner.ts);
 * - the card's lock handed down: the worker opens the card's lock file (one open file
 *   description), locks it with flock(1) and passes it as fd INHERITED_LOCK_FD; a flock belongs to
 *   the description, so the rank's processes hold it together for their life, and any other
 *   process on the card is CARD_BUSY.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { OrchError } from '../jobs/errors.ts';

/** The fd a rank process inherits the card's lock on (the first after stdio). */
export const INHERITED_LOCK_FD = 3;
/** flock(1)'s exit code when the card's lock is held by another description (-E). */
export const LOCK_BUSY_EXIT = 4;

let setprivChecked: boolean | undefined;
function hasSetpriv(): boolean {
  if (setprivChecked === undefined) {
    const r = spawnSync('setpriv', ['--pdeathsig', 'KILL', '--', 'true'], { stdio: 'ignore' });
    setprivChecked = !r.error && r.status === 0;
  }
  return setprivChecked;
}

/** `$0` execs the program with SIGTERM ignored: an ignored disposition survives exec. */
const IGNORING_TERM = ['/bin/sh', '-c', 'trap "" TERM; exec "$0" "$@"'] as const;

/** `file argv` with SIGTERM ignored, under setpriv's death signal where it exists; `warn` is told when it does not. */
export function fateShared(file: string, argv: string[], warn: (msg: string) => void): [string, string[]] {
  const run = [...IGNORING_TERM, file, ...argv];
  if (hasSetpriv()) return ['setpriv', ['--pdeathsig', 'KILL', '--', ...run]];
  warn('setpriv not found: ranks exit when their stdin closes, not on the worker death signal');
  return [run[0]!, run.slice(1)];
}

/**
 * flock(LOCK_EX|LOCK_NB) on the worker's open file description of the card's lock, by flock(1)
 * on the inherited fd (Node has no flock): exit 0 locked, LOCK_BUSY_EXIT when another description
 * holds it. The lock stays on the description after flock(1) exits.
 */
export function lockDescription(fd: number, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('flock', ['-n', '-E', String(LOCK_BUSY_EXIT), String(INHERITED_LOCK_FD)], { stdio: ['ignore', 'ignore', 'pipe', fd] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-500)));
    child.once('error', (err) => reject(new OrchError('CARD_LOCK_HANDOFF', `cannot run flock(1) to take the card lock ${path}: ${err.message}`, { cause: err })));
    child.once('close', (code) => {
      if (code === 0) resolve();
      else if (code === LOCK_BUSY_EXIT) reject(new OrchError('CARD_BUSY', `card lock ${path}: held by another process; one rank per card`));
      else reject(new OrchError('CARD_LOCK_HANDOFF', `flock(1) on the card lock ${path} exited ${code}: ${stderr.trim()}`));
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
