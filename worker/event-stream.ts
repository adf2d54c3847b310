/**
 * The experiment's live event stream (`<prefix>:experiment:<id>:events`): every graphrt line and every
 * worker event, XADDed as it happens, tagged `block attempt epoch host card rank event`
 * (jobs/CONTRACTS.md). Worker events are protocol-shaped: `{"v":1,"type":"worker","event":...}`
 * with card/rank empty when they concern the whole gang.
 *
 * Appends are fire-and-forget on one connection (ioredis keeps their order); `flush()` awaits
 * them. Each goes through the record's owner (store/event-log.ts) and store/lua/append-event.lua, which writes nothing once the experiment
 * is gone (a Redis that lost its data). An event longer than MAX_EVENT_BYTES keeps its head and
 * a note of what was cut: a rank's 1 MiB lines, thousands of them, would otherwise fill Redis.
 * A rank's output (every line but a request's final answer) is bounded twice (jobs/line-limit.ts):
 * per rep here, and per experiment in the script; what either drops is counted, never silent.
 * Once the script says the experiment's budget is spent, output is dropped here without a round
 * trip (a flooding rank would otherwise queue one command per line) and counted at `flush()`.
 * A failed append is logged, never fails the block: the stream is for watching, the
 * committed results are the record.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { EVENT_OVERHEAD_BYTES, OUTPUT_PER_EXPERIMENT, OUTPUT_PER_REP } from '../jobs/line-limit.ts';
import type { RankLine } from '../jobs/rank-line.ts';
import { type WorkerEvent, type WorkerEventFields, WorkerEventSchema } from '../jobs/worker-event.ts';
import { EventLog, type EventLogKeys, type EventTags, tagBytes } from '../store/event-log.ts';

export type { EventTags } from '../store/event-log.ts';

/** The longest event stored whole in the stream; a longer one is cut (capEvent). */
export const MAX_EVENT_BYTES = 16 * 1024;

/** `event` itself, or its first bytes and a note saying how much was cut. */
export function capEvent(event: string, max = MAX_EVENT_BYTES): string {
  const bytes = Buffer.byteLength(event);
  if (bytes <= max) return event;
  // cut on a character boundary: the head decodes as it was printed
  const head = Buffer.from(event)
    .subarray(0, max)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  return `${head}… [orch: event cut: ${bytes} bytes, the first ${Buffer.byteLength(head)} kept]`;
}

/** The keys of one experiment's stream, its existence and its output budget (store/keys.ts). */
export type EventStreamKeys = EventLogKeys;

interface RepOutput {
  tags: EventTags;
  id: string;
  lines: number;
  bytes: number;
  droppedLines: number;
  droppedBytes: number;
}

export class EventStream {
  private pending = new Set<Promise<unknown>>();
  /** each rank's output of the request it is answering, against OUTPUT_PER_REP */
  private readonly reps = new Map<string, RepOutput>();
  /** the script refused output: the experiment's budget is spent */
  private spent = false;
  /** output dropped here that the budget hash does not count yet */
  private uncounted = { lines: 0, bytes: 0 };
  private readonly record: EventLog;

  constructor(
    redis: Redis,
    keys: EventStreamKeys,
    private readonly log: Logger,
    private readonly limits: { rep: { lines: number; bytes: number }; experiment: { lines: number; bytes: number } } = {
      rep: OUTPUT_PER_REP,
      experiment: OUTPUT_PER_EXPERIMENT,
    },
  ) {
    this.record = new EventLog(redis, keys);
  }

  /** Appends one event that is always stored (a worker event, a request's final answer). */
  emit(tags: EventTags, event: string): void {
    this.append('essential', tags, capEvent(event), null);
  }

  /**
   * Appends one line of a rank as it printed it: a final answer always (after the note of what its
   * request's output lost, if anything); any other line as output, within the bounds.
   */
  rankLine(tags: EventTags, line: RankLine, raw: string): void {
    const id = 'id' in line && typeof line.id === 'string' ? line.id : '';
    const scope = `${tags.rank}/${id}`;
    if ('final' in line && line.final === true) {
      this.endRep(scope);
      this.emit(tags, raw);
      return;
    }
    const event = capEvent(raw);
    const size = eventSize(tags, event);
    let rep = this.reps.get(scope);
    if (!rep) {
      rep = { tags, id, lines: 0, bytes: 0, droppedLines: 0, droppedBytes: 0 };
      this.reps.set(scope, rep);
    }
    if (rep.lines + 1 > this.limits.rep.lines || rep.bytes + size > this.limits.rep.bytes) {
      rep.droppedLines++;
      rep.droppedBytes += size;
      this.uncount(size);
      return;
    }
    rep.lines++;
    rep.bytes += size;
    if (this.spent) {
      this.uncount(size);
      return;
    }
    this.append('output', tags, event, { ...this.limits.experiment, note: this.experimentNote() });
  }

  /** Appends a worker event `{ v: 1, type: 'worker', event, ...fields }`, checked against its schema. */
  worker<E extends WorkerEvent['event']>(tags: EventTags, event: E, fields: WorkerEventFields<E>): void {
    this.emit(tags, workerEvent(event, fields));
  }

  /** Awaits every append; notes what requests never answered lost, and counts what was dropped here. */
  async flush(): Promise<void> {
    for (const scope of [...this.reps.keys()]) this.endRep(scope);
    const { lines, bytes } = this.uncounted;
    if (lines > 0) {
      this.uncounted = { lines: 0, bytes: 0 };
      this.track(this.record.countDropped(lines, bytes), "dropped output not counted in the experiment's budget");
    }
    await Promise.all([...this.pending]);
  }

  /** A request answered (or the block ended): one note if its output passed OUTPUT_PER_REP. */
  private endRep(scope: string): void {
    const rep = this.reps.get(scope);
    if (!rep) return;
    this.reps.delete(scope);
    if (rep.droppedLines === 0) return;
    this.worker(rep.tags, 'output-truncated', {
      scope: 'rep',
      id: rep.id,
      limit_lines: this.limits.rep.lines,
      limit_bytes: this.limits.rep.bytes,
      dropped_lines: rep.droppedLines,
      dropped_bytes: rep.droppedBytes,
    });
  }

  private experimentNote(): string {
    const { lines, bytes } = this.limits.experiment;
    return workerEvent('output-truncated', {
      scope: 'experiment',
      id: null,
      limit_lines: lines,
      limit_bytes: bytes,
      dropped_lines: null,
      dropped_bytes: null,
    });
  }

  private uncount(size: number): void {
    this.uncounted.lines++;
    this.uncounted.bytes += size;
  }

  private append(
    cls: 'essential' | 'output',
    tags: EventTags,
    event: string,
    budget: { lines: number; bytes: number; note: string } | null,
  ): void {
    const p = this.record.append(cls, tags, event, EVENT_OVERHEAD_BYTES, budget).then((reply) => {
      if (reply === 'dropped') this.spent = true;
    });
    this.track(p, 'event not appended to the experiment stream');
  }

  private track(p: Promise<unknown>, what: string): void {
    const t = p.catch((err: unknown) => this.log.warn({ err }, what)).finally(() => this.pending.delete(t));
    this.pending.add(t);
  }
}

/** What an event costs the budget: its fields' bytes as the script counts them, and the entry's overhead. */
function eventSize(tags: EventTags, event: string): number {
  return EVENT_OVERHEAD_BYTES + Buffer.byteLength(event) + 'event'.length + tagBytes(tags);
}

function workerEvent<E extends WorkerEvent['event']>(event: E, fields: WorkerEventFields<E>): string {
  return JSON.stringify(WorkerEventSchema.parse({ v: 1, type: 'worker', event, ...fields }));
}
