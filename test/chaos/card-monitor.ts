/**
 * What the chaos suite watches while a fault plays out, sampled every few ms from outside every
 * orch process:
 * - the card locks: /proc/locks (FLOCK entries) mapped by inode to the lock files of the lock
 *   directory, recording which pid held each card's lock and when it changed hands;
 * - the rank processes (fixture ranks or graphrt, found by their command line: --card-lock with
 *   a lock file of the lock directory): two live ranks on one card at one sample is an overlap;
 * - each rank's CPU time (/proc/<pid>/stat utime + stime), charged as unleased when its card has
 *   no live lease of the rank's own epoch (store/lease-store.ts, read through a direct
 *   connection; while Redis does not answer, the lease read last decides: live until it
 *   expires). A rank's epoch is that of the first live lease of its card read after the rank was
 *   first seen (a rank starts only once its gang is granted; a read begun before it may still
 *   hold the card's previous lease): a rank outliving its lease into the next grant of the card
 *   runs under another epoch's lease, and that is unleased too;
 * - every rank pid and process group seen, for the leftovers check after teardown;
 * - the peak resident memory (VmHWM of /proc/<pid>/status: the kernel's high-water mark, so a
 *   spike between two samples is not missed) of every rank and of each process given to watch().
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Redis } from 'ioredis';
import { LeaseStore } from '../../store/lease-store.ts';
import { cardLockPath } from '../../worker/block-executor.ts';

const CLK_TCK = 100;

interface RankProc {
  pid: number;
  pgid: number;
  lock: string;
  cpuS: number;
  zombie: boolean;
}

export interface MonitorReport {
  /** samples at which two live ranks sat on one card, or two pids held one card's lock */
  overlaps: number;
  overlapDetail: string[];
  unleasedCpuS: number;
  /** rank-seconds of wall time ranks were alive (not zombies) while unleased, burning or idle */
  unleasedAliveS: number;
  rankPids: number[];
  rankPgids: number[];
  /** per lock file: the holders in order, with when they took it */
  lockHolders: Map<string, { pid: number; t: number }[]>;
  samples: number;
  /** the highest VmHWM of any rank, MiB */
  rankPeakMiB: number;
  /** per watched label (e.g. "worker"), the highest VmHWM of its processes, MiB */
  peakMiB: Map<string, number>;
}

/** VmHWM of `pid` in MiB; 0 when it is gone (or a zombie: it has no memory left). */
export function peakRssMiB(pid: number): number {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

function rankProcs(lockDir: string): RankProc[] {
  const out: RankProc[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      // a rank is whatever carries a card's lock flag: rank.mjs, graphrt. setpriv and rank.sh are
      // the same pid a moment before their exec (rank.sh may still be refused the lock): not yet
      if (['setpriv', 'bash', 'sh'].includes(basename(argv[0] ?? ''))) continue;
      const at = argv.indexOf('--card-lock');
      const lock = at >= 0 ? (argv[at + 1] ?? '') : '';
      if (!lock.startsWith(`${lockDir}/`)) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.push({
        pid: Number(name),
        pgid: Number(f[2]),
        lock,
        cpuS: (Number(f[11]) + Number(f[12])) / CLK_TCK,
        zombie: f[0] === 'Z',
      });
    } catch {
      // gone between readdir and read
    }
  }
  return out;
}

/** inode → holder pids of the FLOCK entries in /proc/locks */
function flockHolders(): Map<number, number[]> {
  const m = new Map<number, number[]>();
  for (const line of readFileSync('/proc/locks', 'utf8').split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[1] !== 'FLOCK' || f[0]?.endsWith('->')) continue;
    const inode = Number((f[5] ?? '').split(':')[2]);
    m.set(inode, [...(m.get(inode) ?? []), Number(f[4])]);
  }
  return m;
}

export class CardMonitor {
  private timer: NodeJS.Timeout | null = null;
  private readonly leases: LeaseStore;
  /** lease card id → the lease read last (expiry by Redis clock ms, epoch, when the read began); absent: none */
  private readonly lastRead = new Map<string, { expires: number; epoch: number; readAt: number }>();
  /** rank pid → the epoch of the lease it runs under */
  private readonly rankEpoch = new Map<number, number>();
  /** rank pid → when a sample first saw it */
  private readonly firstSeen = new Map<number, number>();
  private lastSampleAt = 0;
  private refreshing = false;
  private readonly lastCpu = new Map<number, number>();
  private readonly report: MonitorReport = {
    overlaps: 0,
    overlapDetail: [],
    unleasedCpuS: 0,
    unleasedAliveS: 0,
    rankPids: [],
    rankPgids: [],
    lockHolders: new Map(),
    samples: 0,
    rankPeakMiB: 0,
    peakMiB: new Map(),
  };
  /** pid → label of the processes whose memory is watched besides the ranks */
  private readonly watched = new Map<number, string>();
  private readonly pids = new Set<number>();
  private readonly pgids = new Set<number>();

  constructor(
    redis: Redis,
    prefix: string,
    private readonly lockDir: string,
    /** lease card ids, e.g. cpu:0@h1 */
    private readonly cards: string[],
  ) {
    this.leases = new LeaseStore(redis, { prefix });
  }

  start(intervalMs = 25): void {
    const tick = () => {
      this.sample();
      this.refreshLeases();
      this.timer = setTimeout(tick, intervalMs);
    };
    tick();
  }

  stop(): MonitorReport {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.sample();
    this.report.rankPids = [...this.pids];
    this.report.rankPgids = [...this.pgids];
    return this.report;
  }

  /** Watches the peak memory of `pid` (its VmHWM, sampled with the ranks) under `label`. */
  watch(pid: number, label: string): void {
    this.watched.set(pid, label);
    this.samplePeak(pid, label);
  }

  private samplePeak(pid: number, label: string): void {
    const mib = peakRssMiB(pid);
    if (mib > (this.report.peakMiB.get(label) ?? 0)) this.report.peakMiB.set(label, mib);
  }

  /** The rank processes alive now (not zombies), read from /proc at the call. */
  liveRankPids(): number[] {
    return rankProcs(this.lockDir).flatMap((p) => (p.zombie ? [] : [p.pid]));
  }

  private refreshLeases(): void {
    if (this.refreshing) return;
    this.refreshing = true;
    const readAt = Date.now();
    void Promise.all(
      this.cards.map(async (c) => {
        const l = await this.leases.get(c);
        if (l === null) this.lastRead.delete(c);
        else this.lastRead.set(c, { expires: l.expires, epoch: l.epoch, readAt });
      }),
    )
      .catch(() => undefined)
      .finally(() => (this.refreshing = false));
  }

  private sample(): void {
    const r = this.report;
    r.samples += 1;
    const now = Date.now();
    const dt = this.lastSampleAt === 0 ? 0 : (now - this.lastSampleAt) / 1000;
    this.lastSampleAt = now;
    const procs = rankProcs(this.lockDir);
    const byLock = new Map<string, number[]>();
    for (const p of procs) {
      this.pids.add(p.pid);
      this.pgids.add(p.pgid);
      if (p.zombie) continue;
      this.report.rankPeakMiB = Math.max(this.report.rankPeakMiB, peakRssMiB(p.pid));
      byLock.set(p.lock, [...(byLock.get(p.lock) ?? []), p.pid]);
      const prev = this.lastCpu.get(p.pid) ?? 0;
      this.lastCpu.set(p.pid, p.cpuS);
      const card = this.cards.find((c) => cardLockPath(this.lockDir, c) === p.lock);
      const lease = card === undefined ? undefined : this.lastRead.get(card);
      const live = lease !== undefined && lease.expires > now;
      if (!this.firstSeen.has(p.pid)) this.firstSeen.set(p.pid, now);
      if (live && !this.rankEpoch.has(p.pid) && lease.readAt > (this.firstSeen.get(p.pid) as number))
        this.rankEpoch.set(p.pid, lease.epoch);
      const own = this.rankEpoch.get(p.pid);
      if (!live || (own !== undefined && own !== lease.epoch)) {
        r.unleasedCpuS += p.cpuS - prev;
        r.unleasedAliveS += dt;
      }
    }
    for (const [pid, label] of this.watched) this.samplePeak(pid, label);
    for (const [lock, pids] of byLock) {
      if (pids.length > 1) {
        r.overlaps += 1;
        r.overlapDetail.push(`${lock}: ranks ${pids.join(', ')} alive at once`);
      }
    }
    let inodes: Map<number, number[]>;
    try {
      inodes = flockHolders();
    } catch {
      return;
    }
    for (const card of this.cards) {
      const lock = cardLockPath(this.lockDir, card);
      let ino: number;
      try {
        ino = statSync(lock).ino;
      } catch {
        continue;
      }
      const holders = [...new Set(inodes.get(ino) ?? [])];
      if (holders.length > 1) {
        r.overlaps += 1;
        r.overlapDetail.push(`${lock}: flock held by ${holders.join(', ')} at once`);
      }
      const seq = r.lockHolders.get(lock) ?? [];
      const cur = holders[0] ?? 0;
      if ((seq.at(-1)?.pid ?? 0) !== cur) seq.push({ pid: cur, t: now });
      r.lockHolders.set(lock, seq);
    }
  }
}

/** pids of `pids` still alive (not zombies), and processes still in one of `pgids`. */
export function leftovers(pids: number[], pgids: number[]): number[] {
  const alive = new Set<number>();
  const self = readFileSync('/proc/self/stat', 'utf8');
  const ownGroup = Number(self.slice(self.lastIndexOf(')') + 2).split(' ')[2]);
  const groups = new Set(pgids.filter((g) => g > 1 && g !== ownGroup));
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(join('/proc', name, 'stat'), 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (f[0] === 'Z') continue;
      const pid = Number(name);
      if (pids.includes(pid) || groups.has(Number(f[2]))) alive.add(pid);
    } catch {
      // gone
    }
  }
  return [...alive];
}
