/**
 * Foreign processes on a card: anything using the card that is not one of this block's ranks
 * (the 100k-step production run that took the card). Checked before a block starts and after
 * every rep; the block fails naming the process, or waits for it to go (spec.foreign_process).
 *
 * - cuda cards: `nvidia-smi --query-compute-apps` rows of the card's UUID whose pid is not a rank.
 *   In a container the driver names processes by the host's pids, which are not processes of the
 *   worker's PID namespace: where no row's pid is a process here, the rows are counted instead
 *   (a gang runs one rank per card), so neither are the ranks foreign nor does a second process hide.
 * - every card (the cpu card's whole definition): a process that is not a rank and holds the
 *   card's host-guard flock or waits for it (lockUsers). Before the ranks start, any holder is
 *   foreign: a `graphrt --card-lock` run by hand, a command rep, a rank of a worker that does not
 *   hold the lease. While the ranks live nobody else can hold the flock, so what this finds then
 *   is a process blocked waiting to get onto the card.
 */

import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, type Stats, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import type { Card } from '../store/card-registry.ts';
import { helper } from './helper-paths.ts';

const run = promisify(execFile);

export interface ForeignProcess {
  pid: number;
  /** command line (or nvidia-smi's process name) */
  name: string;
  /** how it was found */
  via: 'nvidia-smi' | 'card-lock';
}

export interface ForeignProcessProbe {
  /** Processes on `card` that are not in `ours`. */
  list(card: Card, lockPath: string, ours: ReadonlySet<number>): Promise<ForeignProcess[]>;
}

export function describeForeign(card: Card, procs: ForeignProcess[]): string {
  return `card ${card.id} is used by a process that is not this block's: ${procs
    .map((p) => `pid ${p.pid} (${p.name}, seen by ${p.via})`)
    .join(', ')}`;
}

export class HostForeignProcessProbe implements ForeignProcessProbe {
  constructor(private readonly nvidiaSmi = helper('nvidia-smi')) {}

  async list(card: Card, lockPath: string, ours: ReadonlySet<number>): Promise<ForeignProcess[]> {
    const found = new Map<number, ForeignProcess>();
    // this worker holds a user's program's lock on its own descriptor (worker/rank-process.ts)
    for (const p of lockUsers(lockPath)) if (!ours.has(p.pid) && p.pid !== process.pid) found.set(p.pid, p);
    if (card.backend === 'cuda') {
      for (const p of foreignApps(await this.computeApps(card.uuid), ours)) if (!found.has(p.pid)) found.set(p.pid, p);
    }
    return [...found.values()];
  }

  private async computeApps(uuid: string): Promise<ForeignProcess[]> {
    const { stdout } = await run(
      this.nvidiaSmi,
      ['--query-compute-apps=gpu_uuid,pid,process_name', '--format=csv,noheader'],
      { timeout: 10_000 },
    );
    return stdout
      .split('\n')
      .map((l) => l.split(',').map((f) => f.trim()))
      .filter((f) => f[0] === uuid && f[1] !== undefined && /^\d+$/.test(f[1]))
      .map((f) => ({ pid: Number(f[1]), name: f[2] ?? '?', via: 'nvidia-smi' as const }));
  }
}

/**
 * The compute apps that are not ours. By pid where the pids are this namespace's; else by count:
 * more rows than ranks on the card (one once the gang's ranks run, none before) means a foreign
 * one, which cannot be told apart from ours, so all are named with the count.
 */
export function foreignApps(rows: readonly ForeignProcess[], ours: ReadonlySet<number>): ForeignProcess[] {
  const notOurs = rows.filter((p) => !ours.has(p.pid));
  const otherNamespace = rows.length > 0 && rows.every((p) => !ours.has(p.pid) && !existsSync(`/proc/${p.pid}`));
  if (!otherNamespace || ours.size === 0) return notOurs;
  const ranks = 1;
  if (rows.length <= ranks) return [];
  const why = `${rows.length} processes on the card for ${ranks} rank; nvidia-smi's pids are of another PID namespace (a container), so compared by count`;
  return rows.map((p) => ({ ...p, name: `${p.name}; ${why}` }));
}

/**
 * Processes using the card's lock file: the flock holders and blocked waiters /proc/locks names
 * (matched by the file's device and inode). When a named pid is gone — flock(1) took the lock for
 * a descriptor it handed down, as in `exec 9>lock; flock -n 9; exec prog` — the processes that
 * have the file open (/proc/<pid>/fd) are the holders. Empty when nobody locks the file, or off
 * Linux.
 */
export function lockUsers(path: string): ForeignProcess[] {
  const target = resolve(path);
  let st: Stats;
  try {
    st = statSync(target);
  } catch {
    return [];
  }
  const named = flockPids(st.dev, st.ino);
  const alive = named.filter((pid) => existsSync(`/proc/${pid}`));
  const pids = new Set(alive);
  if (alive.length < named.length) for (const pid of openedBy(target)) pids.add(pid);
  return [...pids].map((pid) => ({ pid, name: cmdline(pid), via: 'card-lock' as const }));
}

/** pids of the FLOCK lines of (dev, ino) in /proc/locks, holders and blocked waiters ("->"). */
function flockPids(dev: number, ino: number): number[] {
  const major = Math.floor(dev / 256) & 0xfff;
  const minor = (dev & 0xff) | (Math.floor(dev / 4096) & 0xfff00);
  let text: string;
  try {
    text = readFileSync('/proc/locks', 'utf8');
  } catch {
    return [];
  }
  const out = new Set<number>();
  for (const line of text.split('\n')) {
    // "1: FLOCK  ADVISORY  WRITE 12345 fe:00:1474578 0 EOF" / "1: -> FLOCK  ADVISORY  WRITE ..."
    const m = /^\d+:\s+(?:->\s+)?FLOCK\s+\S+\s+\S+\s+(\d+)\s+([0-9a-f]+):([0-9a-f]+):(\d+)\s/.exec(line);
    if (!m) continue;
    const [, pid, maj, min, i] = m;
    if (Number(i) === ino && parseInt(maj as string, 16) === major && parseInt(min as string, 16) === minor)
      out.add(Number(pid));
  }
  return [...out];
}

/** pids with `target` open (only processes whose fd table this user may read). */
function openedBy(target: string): number[] {
  const out: number[] = [];
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return out;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === target) {
          out.push(Number(pid));
          break;
        }
      } catch {
        // closed meanwhile
      }
    }
  }
  return out;
}

function cmdline(pid: number): string {
  try {
    const c = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
    return c.length > 200 ? `${c.slice(0, 200)}…` : c || '?';
  } catch {
    return '?';
  }
}
