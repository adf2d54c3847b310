/**
 * An EventStream that notes when each rep line's append has reached Redis: an ECHO sent after
 * the append on the same connection answers after it (ioredis keeps one connection's order).
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { EventStream, type EventStreamKeys, type EventTags } from '../../worker/event-stream.ts';

export class StampedEventStream extends EventStream {
  /** rep request id → CLOCK_MONOTONIC ns when its line's append was answered */
  readonly written = new Map<string, number>();

  constructor(
    private readonly conn: Redis,
    keys: EventStreamKeys,
    log: Logger,
  ) {
    super(conn, keys, log);
  }

  override emit(tags: EventTags, event: string): void {
    super.emit(tags, event);
    const m = /^\{"v":1,"type":"rep","id":"([^"]+)"/.exec(event);
    if (m) void this.conn.echo('').then(() => this.written.set(m[1] as string, Number(process.hrtime.bigint())));
  }
}
