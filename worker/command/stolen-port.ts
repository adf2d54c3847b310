/**
 * Whether rank 0 of a command gang died before its hello because its MASTER_PORT was taken by
 * another process between the worker's bind-probe (worker/free-port.ts) and rank 0's own bind: a
 * race no probe can close, as the port is free until the program binds it, seconds later (torch's
 * import). Such a start is tried once more on another port (worker/gang-ranks.ts).
 *
 * Two signals, both needed: rank 0's own last lines say an address was in use (torch's TCPStore
 * "errno: 98 - Address already in use", Python's "[Errno 98] Address already in use", Node's
 * EADDRINUSE), and that address is the gang's port: the line names it, or a bind-probe of it,
 * once every rank of the gang has ended, finds it held (by a process that is none of the ranks).
 * A program that failed to bind a port of its own (a metrics server) is not retried.
 */
import { OrchError } from '../../jobs/errors.ts';
import type { RankOutput } from '../../jobs/rank-output-tail.ts';
import { GANG_PORTS_ENV, portFree } from '../free-port.ts';

/** A MASTER_PORT taken under rank 0, and rank 0's line that says so. */
export interface StolenPort {
  port: number;
  line: string;
}

const ADDRESS_IN_USE = /address already in use|EADDRINUSE|errno:? ?98\b/i;

/**
 * The line of rank 0's `output` that says `port` was taken, or null when it was not (the rank
 * failed otherwise). The gang's ranks must have ended: their own sockets do not count.
 */
export async function stolenPortLine(output: RankOutput, port: number): Promise<string | null> {
  const said = [...output.stderr, ...output.stdout].filter((l) => ADDRESS_IN_USE.test(l));
  if (said.length === 0) return null;
  const naming = new RegExp(`[:\\s]${port}\\b`);
  const named = said.find((l) => naming.test(l));
  if (named !== undefined) return named;
  return (await portFree(port)) ? null : (said[said.length - 1] as string);
}

/** The gang's start was tried again on another port, and that one was taken too. */
export class PortTakenTwiceError extends OrchError {
  constructor(first: StolenPort, second: StolenPort, host: string) {
    super(
      'GANG_PORT_TAKEN',
      `rank 0 could not bind MASTER_PORT ${first.port}, nor ${second.port} when the gang was started again: each was taken by another process on host ${host} after this worker checked it free (rank 0 said: ${second.line})`,
      {
        hint: `something on ${host} takes ports of the gang's range as they are handed out: set ${GANG_PORTS_ENV} on its worker to ports nothing else uses`,
      },
    );
  }
}
