/**
 * A TCP port for a command gang's rendezvous (MASTER_PORT): chosen by rank 0's worker for one
 * block attempt, checked by binding it (a bind-probe), and another tried when it is taken.
 *
 * Candidates come from below Linux's ephemeral range (32768–60999, net.ipv4.ip_local_port_range),
 * so the kernel does not hand the port to an outgoing connection between the probe and the
 * moment rank 0 (torch's TCPStore, the user's own listener) binds it. The probe binds every
 * address of the host, as TCPStore does: a port held on any one of them is taken.
 */
import { createServer } from 'node:net';
import { OrchError } from '../jobs/errors.ts';

export const PORT_RANGE = { low: 20000, high: 32767 } as const;
const MAX_TRIES = 32;

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

function randomPort(): number {
  return PORT_RANGE.low + Math.floor(Math.random() * (PORT_RANGE.high - PORT_RANGE.low + 1));
}

/**
 * A free port: the first of `candidates` (default: random ones in PORT_RANGE) whose bind-probe
 * succeeds. `onTaken` hears each one found taken (the worker logs it: a retry, not a failure).
 */
export async function pickFreePort(
  opts: { candidates?: () => number; tries?: number; onTaken?: (port: number) => void } = {},
): Promise<number> {
  const next = opts.candidates ?? randomPort;
  const tries = opts.tries ?? MAX_TRIES;
  const taken: number[] = [];
  for (let i = 0; i < tries; i++) {
    const port = next();
    if (await portFree(port)) return port;
    taken.push(port);
    opts.onTaken?.(port);
  }
  throw new OrchError(
    'GANG_NO_PORT',
    `no free TCP port for the gang's rendezvous after ${tries} bind-probes (taken: ${taken.slice(0, 8).join(', ')}${taken.length > 8 ? ', …' : ''})`,
  );
}
