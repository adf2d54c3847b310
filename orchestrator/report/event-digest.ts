/**
 * What the results and the report need of an experiment's events, folded one event at a time as
 * a reader streams them (from Redis page by page, or events.jsonl line by line): the ranks'
 * table, the launches, the provenance's cards and clocks, the devices the committed hello lines
 * named, and the counts. Memory holds the folds' state (the blocks in flight, one entry per card
 * and per arm and rank), never the events: a record of millions of events is read in one pass.
 */
import { join } from 'node:path';
import type { StreamEvent } from '../../jobs/stream-event.ts';
import { importJsonl } from '../../store/event-log.ts';
import { ProvenanceFold } from './provenance.ts';
import type { BusyShareRow } from '../stats/busy-share.ts';
import { RankSummaryFold, type RankRow } from '../stats/rank-summary.ts';
import { LaunchSummaryFold, type LaunchRow } from '../stats/launch-summary.ts';
import { RunTimingFold } from '../stats/run-timing.ts';

/**
 * The tables of report.md beside the analysis (orchestrator/report/render-report-files.ts): the
 * ranks and launches from the events, the card time from the committed reps (busy-share.ts).
 */
export interface EventTables {
  ranks: RankRow[];
  busy: BusyShareRow[];
  launches: LaunchRow[];
}

export class EventDigest {
  readonly provenance = new ProvenanceFold();
  readonly timing = new RunTimingFold();
  private readonly ranks = new RankSummaryFold();
  private readonly launches = new LaunchSummaryFold();
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
        else if (h.program !== undefined) this.devices.add(`${h.program.device} (${h.program.name} through ${h.program.library}, ${h.program.backend}, timed by ${h.program.timing})`);
      }
    }
    this.ranks.add(e);
    this.launches.add(e);
    this.provenance.add(e);
    this.timing.add(e);
  };

  /** `busy`: the card time, from the committed records (busy-share.ts), never from these events. */
  tables(busy: BusyShareRow[]): EventTables {
    return { ranks: this.ranks.result(), busy, launches: this.launches.rows() };
  }

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
