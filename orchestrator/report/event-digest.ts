/**
 * What the results need of an experiment's events, folded one event at a time as a reader streams
 * them (from Redis page by page, or events.jsonl line by line): the provenance's hosts and cards
 * (hello lines), the devices the committed hello lines named, and the counts. The report's tables
 * and the prior run's timing come from the committed records (record-tables.ts, run-timing.ts),
 * never from here. Memory holds the folds' state (one entry per card and host), never the events:
 * a record of millions of events is read in one pass.
 */
import { join } from 'node:path';
import type { StreamEvent } from '../../jobs/stream-event.ts';
import { importJsonl } from '../../store/event-log.ts';
import { ProvenanceFold } from './provenance.ts';

export class EventDigest {
  readonly provenance = new ProvenanceFold();
  /** the devices the committed attempts' hello lines named (graphrt's, and a resident program's own) */
  readonly devices = new Set<string>();
  total = 0;
  committed = 0;

  add = (e: StreamEvent): void => {
    this.total++;
    if (e.committed) {
      this.committed++;
      if (typeof e.event === 'object' && e.event?.type === 'hello') {
        const h = e.event;
        if (h.backend !== 'command') this.devices.add(h.device);
        // a resident program's own hello: where it ran, through what, on which clock
        else if (h.program !== undefined)
          this.devices.add(
            `${h.program.device} (${h.program.name} through ${h.program.library}, ${h.program.backend}, timed by ${h.program.timing})`,
          );
      }
    }
    this.provenance.add(e);
  };

  static async of(events: AsyncIterable<StreamEvent> | Iterable<StreamEvent>): Promise<EventDigest> {
    const d = new EventDigest();
    for await (const e of events) d.add(e);
    return d;
  }
}

/** The digest of a results directory's events.jsonl, streamed line by line through the schema. */
export async function digestOfDir(dir: string): Promise<EventDigest> {
  return EventDigest.of(importJsonl(join(dir, 'events.jsonl')));
}
