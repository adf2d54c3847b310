/**
 * Where a spread gang's rank 0 listens when this worker runs under Slurm: the node's NodeAddr
 * (`scontrol show node -o NAME`), the address the cluster reaches the node at, rather than the
 * first interface the machine lists (a management or container network, often). ORCH_ADVERTISE_ADDR,
 * when set, still wins (worker/advertise-address.ts).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { parseNodeAddr } from '../../jobs/slurm-allocation.ts';

const run = promisify(execFile);

/** The node's NodeAddr; a scontrol that fails throws (the caller says what it needed it for). */
export async function slurmNodeAddress(node: string): Promise<string | null> {
  const { stdout } = await run('scontrol', ['show', 'node', '-o', node], { timeout: 15_000 });
  return parseNodeAddr(stdout);
}
