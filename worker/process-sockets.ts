/**
 * The TCP sockets some processes hold, read from /proc: each socket's local and remote port and
 * whether it listens. The worker asks it of its own ranks (worker/command/rendezvous-joins.ts):
 * which of them reached the gang's rendezvous port. A socket is a process's when one of its
 * descriptors links to `socket:[inode]`; the inode's row is in the tcp tables of the process's
 * network namespace (/proc/<pid>/net/tcp and tcp6). A process that is gone, or whose descriptors
 * this user may not read, holds none.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

export interface TcpSocket {
  localPort: number;
  remotePort: number;
  /** state LISTEN (a server socket), else a connection (established, or being opened or closed) */
  listening: boolean;
}

/** /proc/net/tcp's `st` of a listening socket (include/net/tcp_states.h TCP_LISTEN). */
const TCP_LISTEN = '0A';

function socketInodes(pid: number): Set<string> {
  const out = new Set<string>();
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return out;
  }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m?.[1] !== undefined) out.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

/** `hex-address:HEXPORT` (IPv4 or IPv6 alike) → the port. */
function portOf(endpoint: string): number {
  return parseInt(endpoint.slice(endpoint.lastIndexOf(':') + 1), 16);
}

/** The rows of one tcp table, by inode (`sl local rem st tx:rx tr:when retrnsmt uid timeout inode …`). */
function tcpTable(path: string): Map<string, TcpSocket> {
  const out = new Map<string, TcpSocket>();
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n').slice(1)) {
    const [, local, remote, state, , , , , , inode] = line.trim().split(/\s+/);
    if (local === undefined || remote === undefined || inode === undefined) continue;
    // a socket being set up or torn down has no inode yet (0): it is nobody's
    if (inode === '0') continue;
    out.set(inode, {
      localPort: portOf(local),
      remotePort: portOf(remote),
      listening: state === TCP_LISTEN,
    });
  }
  return out;
}

/** The TCP sockets (IPv4 and IPv6) that any of `pids` holds now. */
export function tcpSocketsOf(pids: readonly number[]): TcpSocket[] {
  const out: TcpSocket[] = [];
  // one read of the tables per network namespace: a rank's processes usually share one
  const tables = new Map<string, Map<string, TcpSocket>>();
  for (const pid of pids) {
    const inodes = socketInodes(pid);
    if (inodes.size === 0) continue;
    let ns: string;
    try {
      ns = readlinkSync(`/proc/${pid}/ns/net`);
    } catch {
      continue;
    }
    let table = tables.get(ns);
    if (table === undefined) {
      table = new Map([...tcpTable(`/proc/${pid}/net/tcp`), ...tcpTable(`/proc/${pid}/net/tcp6`)]);
      tables.set(ns, table);
    }
    for (const inode of inodes) {
      const s = table.get(inode);
      if (s !== undefined) out.push(s);
    }
  }
  return out;
}
