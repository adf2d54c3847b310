/**
 * A TCP port for a command gang's rendezvous (MASTER_PORT): chosen by rank 0's worker for one
 * block attempt, checked by binding it (a bind-probe), and another tried when it is taken.
 *
 * Candidates come from below Linux's ephemeral range (32768–60999, net.ipv4.ip_local_port_range),
 * so the kernel does not hand the port to an outgoing connection between the probe and the
 * moment rank 0 (torch's TCPStore, the user's own listener) binds it, or from the worker's
 * ORCH_GANG_PORTS (the ports a firewall between the hosts of a spread gang leaves open). The
 * probe binds every address of the host, as TCPStore does: a port held on any one of them is taken.
 */
import { createServer } from 'node:net';
import { OrchError, UserInputError } from '../jobs/errors.ts';

export interface PortRange {
  low: number;
  high: number;
}

export const PORT_RANGE: PortRange = { low: 20000, high: 32767 };
const MAX_TRIES = 32;
export const GANG_PORTS_ENV = 'ORCH_GANG_PORTS';

/**
 * The ports a rendezvous may take: ORCH_GANG_PORTS=LOW-HIGH when set, else PORT_RANGE. A malformed
 * value is refused naming the variable and its fix (`orch worker` reads it once as it starts).
 */
export function gangPortRange(env: NodeJS.ProcessEnv = process.env): PortRange {
  const set = env[GANG_PORTS_ENV]?.trim();
  if (!set) return PORT_RANGE;
  const m = /^(\d+)-(\d+)$/.exec(set);
  const [low, high] = m === null ? [Number.NaN, Number.NaN] : [Number(m[1]), Number(m[2])];
  if (!(low >= 1024 && high <= 65535 && low <= high))
    throw new UserInputError(
      'CLI_USAGE',
      `${GANG_PORTS_ENV}=${set}: expected LOW-HIGH, two TCP ports from 1024 to 65535 with LOW at most HIGH`,
      {
        hint: `set ${GANG_PORTS_ENV} to the ports rank 0 of a command gang may listen on (e.g. 29500-29599), or unset it for ${PORT_RANGE.low}-${PORT_RANGE.high}`,
      },
    );
  return { low, high };
}

/** Whether `port` can be bound on every address now (the probe's socket is closed again). */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE' || err.code === 'EACCES') resolve(false);
      else reject(err);
    });
    server.listen({ port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/**
 * The range's ports from a random one on, wrapping at its end: two gangs starting on one host
 * rarely probe the same port, and a range smaller than the tries is probed whole, each port once.
 */
function portWalk(range: PortRange): () => number {
  const size = range.high - range.low + 1;
  let offset = Math.floor(Math.random() * size);
  return () => range.low + (offset++ % size);
}

/**
 * The ports this worker handed to gangs still running: a rank 0 binds its port only once its
 * program has started (seconds, for torch's import), so until then a bind-probe finds it free,
 * and two gangs starting together on one host would both take it. Each is released by
 * `releasePort` as its attempt ends.
 */
const handedOut = new Set<number>();

/** The port of an attempt that ended is free to hand out again. */
export function releasePort(port: number): void {
  handedOut.delete(port);
}

/**
 * A free port, handed out until `releasePort`: the first of `candidates` (default: a walk over
 * `range`, PORT_RANGE unless given) that no running gang of this worker holds and whose
 * bind-probe succeeds. `onTaken` hears each one found taken (the worker logs it: a retry, not a
 * failure).
 */
export async function pickFreePort(
  opts: { range?: PortRange; candidates?: () => number; tries?: number; onTaken?: (port: number) => void } = {},
): Promise<number> {
  const range = opts.range ?? PORT_RANGE;
  const next = opts.candidates ?? portWalk(range);
  const tries = opts.tries ?? Math.min(MAX_TRIES, range.high - range.low + 1);
  const taken: number[] = [];
  for (let i = 0; i < tries; i++) {
    const port = next();
    if (!handedOut.has(port) && (await portFree(port))) {
      handedOut.add(port);
      return port;
    }
    taken.push(port);
    opts.onTaken?.(port);
  }
  throw new OrchError(
    'GANG_NO_PORT',
    `no free TCP port for the gang's rendezvous after ${tries} bind-probes (taken: ${taken.slice(0, 8).join(', ')}${taken.length > 8 ? ', …' : ''})`,
  );
}
