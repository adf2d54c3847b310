/**
 * The experiment's live event stream (`<prefix>:experiment:<id>:events`): every graphrt line and every
 * worker event, XADDed as it happens, tagged `block attempt epoch host card rank event`
 * (jobs/CONTRACTS.md). Worker events are protocol-shaped: `{"v":1,"type":"worker","event":...}`
 * with card/rank empty when they concern the whole gang.
 *
 * Appends are fire-and-forget on one connection (ioredis keeps their order); `flush()` awaits
 * them. A failed append is logged, never fails the block: the stream is for watching, the
 * committed results are the record.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { WorkerEventSchema, type WorkerEvent, type WorkerEventFields } from '../jobs/worker-event.ts';

export interface EventTags {
  block: number;
  attempt: number;
  epoch: number;
  host: string;
  card: string;
  rank: number | '';
}

export class EventStream {
  private pending = new Set<Promise<unknown>>();

  constructor(
    private readonly redis: Redis,
    private readonly key: string,
    private readonly log: Logger,
  ) {}

  /** Appends one event (a JSON line, as the rank printed it). */
  emit(tags: EventTags, event: string): void {
    const p = this.redis
      .xadd(this.key, '*', 'block', String(tags.block), 'attempt', String(tags.attempt), 'epoch', String(tags.epoch),
        'host', tags.host, 'card', tags.card, 'rank', String(tags.rank), 'event', event)
      .catch((err: unknown) => this.log.warn({ err }, 'event not appended to the experiment stream'))
      .finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  /** Appends a worker event `{ v: 1, type: 'worker', event, ...fields }`, checked against its schema. */
  worker<E extends WorkerEvent['event']>(tags: EventTags, event: E, fields: WorkerEventFields<E>): void {
    this.emit(tags, JSON.stringify(WorkerEventSchema.parse({ v: 1, type: 'worker', event, ...fields })));
  }

  async flush(): Promise<void> {
    await Promise.all([...this.pending]);
  }
}
