/**
 * Keeps a gang's leases alive and notices, by this process's own monotonic clock, when it may
 * have lost them. A renew is sent every `everyMs`; the gang counts as lost when no renew has
 * succeeded within `ttlMs` of when that renew was sent — the lease Redis holds expires no
 * earlier than that, so the ranks are dead by the time another gang can be granted the cards.
 *
 * Independent of whether Redis calls return: the connections retry forever
 * (maxRetriesPerRequest: null), so a renew to a Redis that is stopped, partitioned or behind a
 * dead proxy may never settle; the deadline here is a timer, not the renew's answer.
 * performance.now() does not jump with the wall clock (NTP steps, a suspended VM's catch-up).
 */
import { performance } from 'node:perf_hooks';
import { messageOf } from '../jobs/message-of.ts';

export interface LeaseKeeperOptions {
  ttlMs: number;
  everyMs: number;
  /** one renew round trip; resolves when Redis extended the leases (a refusal is the caller's to report) */
  renew: () => Promise<void>;
  /** called once: the deadline passed, or a renew failed */
  onLost: (why: string) => void;
}

export class LeaseKeeper {
  private lastOkSentAt = performance.now();
  private inFlight = false;
  private renewTimer: NodeJS.Timeout | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private lost = false;

  constructor(private readonly o: LeaseKeeperOptions) {}

  /**
   * Renews once now and then every everyMs; resolves after the first renew succeeded. Counts the
   * TTL from now: the grant was sent earlier, so this errs on the side of the lease, by at most
   * the dispatch delay.
   */
  async start(): Promise<void> {
    this.lastOkSentAt = performance.now();
    this.watchdog = setInterval(() => this.check(), Math.max(10, Math.min(this.o.everyMs, this.o.ttlMs / 8)));
    await this.attempt();
    if (!this.lost) this.renewTimer = setInterval(() => void this.attempt(), this.o.everyMs);
  }

  stop(): void {
    clearInterval(this.renewTimer);
    clearInterval(this.watchdog);
  }

  private async attempt(): Promise<void> {
    // one renew at a time: a hung one is the watchdog's to judge, not a pile of queued copies
    if (this.inFlight || this.lost) return;
    this.inFlight = true;
    const sent = performance.now();
    try {
      await this.o.renew();
      this.lastOkSentAt = Math.max(this.lastOkSentAt, sent);
    } catch (err) {
      this.lose(`lease renew failed: ${messageOf(err)}`);
    } finally {
      this.inFlight = false;
    }
  }

  private check(): void {
    const since = performance.now() - this.lastOkSentAt;
    if (since >= this.o.ttlMs) {
      this.lose(
        `no lease renew succeeded for ${Math.round(since)} ms (lease TTL ${this.o.ttlMs} ms, by this host's clock): Redis is unreachable or not answering, and the leases may have expired`,
      );
    }
  }

  private lose(why: string): void {
    if (this.lost) return;
    this.lost = true;
    this.stop();
    this.o.onLost(why);
  }
}
