/**
 * The experiment's live event stream (`<prefix>:experiment:<id>:events`): every graphrt line and every
 * worker event, XADDed as it happens, tagged `block attempt epoch host card rank event`
 * (jobs/CONTRACTS.md). Worker events are protocol-shaped: `{"v":1,"type":"worker","event":...}`
 * with card/rank empty when they concern the whole gang.
 *
 * Appends are fire-and-forget on one connection (ioredis keeps their order); `flush()` awaits
 * them. Each goes through store/lua/append-event.lua, which writes nothing once the experiment
 * is gone (a Redis that lost its data). An event longer than MAX_EVENT_BYTES keeps its head and
 * a note of what was cut: a rank's 1 MiB lines, thousands of them, would otherwise fill Redis.
 * A failed append is logged, never fails the block: the stream is for watching, the
 * committed results are the record.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { runScript } from '../store/scripts.ts';
import { WorkerEventSchema, type WorkerEvent, type WorkerEventFields } from '../jobs/worker-event.ts';

export interface EventTags {
  block: number;
  attempt: number;
  epoch: number;
  host: string;
  card: string;
  rank: number | '';
}

/** The longest event stored whole in the stream; a longer one is cut (capEvent). */
export const MAX_EVENT_BYTES = 16 * 1024;

/** `event` itself, or its first bytes and a note saying how much was cut. */
export function capEvent(event: string, max = MAX_EVENT_BYTES): string {
  const bytes = Buffer.byteLength(event);
  if (bytes <= max) return event;
  // cut on a character boundary: the head decodes as it was printed
  const head = Buffer.from(event).subarray(0, max).toString('utf8').replace(/\uFFFD$/, '');
  return `${head}… [orch: event cut: ${bytes} bytes, the first ${Buffer.byteLength(head)} kept]`;
}

export class EventStream {
  private pending = new Set<Promise<unknown>>();

  constructor(
    private readonly redis: Redis,
    private readonly key: string,
    private readonly log: Logger,
    /** the experiment hash: appends stop once it is gone */
    private readonly expKey: string,
  ) {}

  /** Appends one event (a JSON line, as the rank printed it). */
  emit(tags: EventTags, event: string): void {
    const p = runScript(this.redis, 'append-event', [this.expKey, this.key], ['block', String(tags.block), 'attempt', String(tags.attempt), 'epoch', String(tags.epoch),
        'host', tags.host, 'card', tags.card, 'rank', String(tags.rank), 'event', capEvent(event)])
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
