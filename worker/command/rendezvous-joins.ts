/**
 * Which ranks of a command gang reached its rendezvous (MASTER_ADDR:MASTER_PORT), read from the
 * ranks' own sockets (worker/process-sockets.ts): torch.distributed's env:// rendezvous is rank
 * 0's TCPStore listening on MASTER_PORT, which every rank connects to, and so is any listener a
 * program opens there itself. A rank whose processes never held a socket on the port never
 * joined; one that did is waiting in the rendezvous for those that did not. A program that
 * waits in it says no hello (its setup has not returned), so without this the hello deadline
 * could only say that no rank had said hello, not which one the others waited for.
 *
 * The ranks are sampled while the gang starts (a rank killed at the deadline has closed its
 * sockets by the time the failure is written) and a rank once seen stays joined. Only this
 * host's part is seen: across hosts a part names its own ranks. A gang whose ranks never touch
 * MASTER_PORT (an NCCL id passed through the exchange) has no rank seen, and nothing is said.
 */
import type { GangContext } from '../gang-context.ts';
import { tcpSocketsOf } from '../process-sockets.ts';
import { RankNeverJoinedError } from './rank-never-joined-error.ts';

/**
 * How often the starting ranks' sockets are read: a rank that joins stays in the rendezvous while
 * it waits for the others, so a slow sample still sees it; each read of a rank not yet seen scans
 * /proc for its process group (worker/rank-process.ts processGroupPids).
 */
const SAMPLE_MS = 1000;

export class RendezvousJoins {
  /** the card indexes of this part whose rank was seen on the port */
  private readonly seen = new Set<number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly gang: GangContext,
    readonly port: number,
    /** the ranks of this part, in card order: their processes are read only while not seen */
    private readonly ranks: () => readonly { pids(): number[] }[],
  ) {}

  /** Samples now and every SAMPLE_MS until `stop`. */
  watch(): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), SAMPLE_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  sample(): void {
    const ranks = this.ranks();
    if (ranks.every((_, i) => this.seen.has(i))) {
      this.stop();
      return;
    }
    ranks.forEach((rank, i) => {
      if (this.seen.has(i)) return;
      const sockets = tcpSocketsOf(rank.pids());
      // listening or accepted on it (rank 0's store), or connected to it (every rank's client)
      if (sockets.some((s) => s.localPort === this.port || s.remotePort === this.port)) this.seen.add(i);
    });
  }

  /**
   * The failure that names the ranks that never joined, when some did and wait for them: the
   * card indexes `pending` had not said hello by `withinMs`. Null when every pending rank joined
   * or none did (nothing then says the gang uses MASTER_PORT, or who was missing).
   */
  neverJoined(pending: readonly number[], withinMs: number, cause: Error): RankNeverJoinedError | null {
    this.sample();
    const missing = pending.filter((i) => !this.seen.has(i));
    const waiting = pending.filter((i) => this.seen.has(i));
    if (missing.length === 0 || waiting.length === 0) return null;
    const rankOf = (i: number) => this.gang.rankOf(i);
    return new RankNeverJoinedError(
      missing.map((i) => ({ rank: rankOf(i), card: this.gang.job.cards[i] ?? '?', cardIndex: i })),
      waiting.map(rankOf),
      this.port,
      withinMs,
      cause,
    );
  }
}
