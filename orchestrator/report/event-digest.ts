/**
 * What the results need of an experiment's events, counted one event at a time as a reader streams
 * them (from Redis page by page, or events.jsonl line by line): how many, and how many of committed
 * attempts. Every number of the report (the provenance, the tables, the prior run's timing) comes
 * from the committed records (provenance.ts `addCommit`, record-tables.ts, run-timing.ts), never
 * from here. Memory holds two counts, never the events: a record of millions of events is read in
 * one pass.
 */
import type { StreamEvent } from '../../jobs/stream-event.ts';

export class EventDigest {
  total = 0;
  committed = 0;

  add = (e: StreamEvent): void => {
    this.total++;
    if (e.committed) this.committed++;
  };

  static async of(events: AsyncIterable<StreamEvent> | Iterable<StreamEvent>): Promise<EventDigest> {
    const d = new EventDigest();
    for await (const e of events) d.add(e);
    return d;
  }
}
