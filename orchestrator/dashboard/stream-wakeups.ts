/**
 * One blocking reader for every experiment stream the live feeds watch: a single connection runs
 * `XREAD BLOCK` over all watched streams at once and wakes the stream's topic (live-hub.ts) when
 * entries arrive; the topic then reads them on the shared connection, without blocking. However
 * many pages follow however many experiments, the dashboard holds this one extra Redis client
 * (a client each had opened one per page: 2 000 pages, 2 000 clients).
 *
 * A stream watched while a read blocks joins the next read (within BLOCK_MS). The reads go
 * through store/event-log.ts, the one reader of a Redis stream.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { messageOf } from '../../jobs/message-of.ts';
import { lastStreamId, readStreams, type StreamEntries } from '../../store/event-log.ts';

const BLOCK_MS = 1000;
/** Entries one read returns per stream: only their ids are used, to move past them. */
const COUNT = 100;
const RETRY_MS = 250;

interface Watch {
  /** the id after which new entries wake */
  after: string;
  wake: () => void;
}

export class StreamWakeups {
  private readonly conn: Redis;
  private readonly watched = new Map<string, Watch>();
  private stopped = false;
  private idle: (() => void) | null = null;
  private readonly loop: Promise<void>;

  constructor(
    private readonly redis: Redis,
    private readonly log: Logger,
  ) {
    this.conn = redis.duplicate({ connectionName: 'orch-dashboard-streams' });
    this.conn.on('error', () => {});
    this.loop = this.run();
  }

  /** Wakes `wake` on every new entry of `key` from now on (the last entry now is not new). */
  async watch(key: string, wake: () => void): Promise<void> {
    const last = await lastStreamId(this.redis, key);
    this.watched.set(key, { after: last, wake });
    this.idle?.();
  }

  unwatch(key: string): void {
    this.watched.delete(key);
  }

  get watching(): number {
    return this.watched.size;
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.idle = null;
        resolve();
      }, ms);
      this.idle = () => {
        clearTimeout(t);
        this.idle = null;
        resolve();
      };
    });
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      if (this.watched.size === 0 || this.conn.status !== 'ready') {
        await this.pause(this.watched.size === 0 ? 60_000 : RETRY_MS);
        continue;
      }
      const from = [...this.watched].map(([key, w]) => ({ key, id: w.after }));
      let reply: StreamEntries;
      try {
        reply = await readStreams(this.conn, from, { blockMs: BLOCK_MS, count: COUNT });
      } catch (err) {
        if (!this.stopped) this.log.debug({ err: messageOf(err) }, 'dashboard stream reader: read failed; retrying');
        await this.pause(RETRY_MS);
        continue;
      }
      for (const [key, entries] of reply ?? []) {
        const w = this.watched.get(key);
        const newest = entries[entries.length - 1]?.[0];
        if (!w || newest === undefined) continue;
        w.after = newest;
        w.wake();
      }
    }
  }

  async close(): Promise<void> {
    this.stopped = true;
    this.idle?.();
    this.conn.disconnect();
    await this.loop;
  }
}
