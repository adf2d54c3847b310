/**
 * The address other hosts reach this host's ranks at (a spread gang's rank 0 listens on it):
 * ORCH_ADVERTISE_ADDR when set, else the first non-internal IPv4 address, else loopback (a
 * single machine, where every "host" is this one).
 */
import { networkInterfaces } from 'node:os';

export function advertiseAddress(env: NodeJS.ProcessEnv = process.env): string {
  const set = env.ORCH_ADVERTISE_ADDR?.trim();
  if (set) return set;
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}
