/**
 * The one owner of an experiment's event record (jobs/stream-event.ts) in both its forms: the
 * Redis stream (`<prefix>:experiment:<id>:events`, appended through store/lua/append-event.lua)
 * and results/<id>/events.jsonl. Every writer and reader goes through here:
 *
 * - `append` / `countDropped`: the worker's event stream (worker/event-stream.ts), which keeps
 *   the output bounds (jobs/line-limit.ts) and calls here for the write;
 * - `pages`: the whole stream in pages of at most `pageSize` entries (XRANGE COUNT), each entry
 *   through the schema, so a reader of millions of events holds one page at a time;
 * - `follow`: the entries after an id, blocking (XREAD BLOCK; give it a connection of its own);
 * - `exportJsonl` / `importJsonl`: events.jsonl written a chunk at a time and read line by line,
 *   each line parsed with the schema; a line that does not parse is refused with the file, its
 *   line number and the schema path;
 * - `lastStreamId` / `readStreams`: a stream's newest entry id, and one blocking read over
 *   several streams from given ids (raw entries), for the followers that only watch: the
 *   dispatcher's reader of BullMQ's queue events streams and the dashboard's wake-ups. No other
 *   file reads a Redis stream (test/architecture/rules.test.ts). The event stream is a live
 *   view; nothing that counts reads it (a rep counts from its committed record, jobs/rep-result.ts).
 */
import { constants, createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Redis } from 'ioredis';
import { UserInputError } from '../jobs/errors.ts';
import { quoteLine } from '../jobs/line-limit.ts';
import { messageOf } from '../jobs/message-of.ts';
import { bodyFromText, parseStreamEvent, type StreamEvent } from '../jobs/stream-event.ts';
import { orchKeys } from './keys.ts';
import { runScript } from './scripts.ts';

/** Where an event happened, as the worker tags it; rank '' for the gang-wide worker events. */
export interface EventTags {
  block: number;
  attempt: number;
  epoch: number;
  host: string;
  card: string;
  rank: number | '';
}

/** An append's class (store/lua/append-event.lua): `output` is held to the experiment's budget. */
export type AppendClass = 'essential' | 'output';

/** The experiment's output budget and the note written in place of the first line it refuses. */
export interface OutputBudgetArgs {
  lines: number;
  bytes: number;
  note: string;
}

/** Entries per XRANGE page: a page is all a reader holds of the stream at once. */
export const EVENT_PAGE_SIZE = 1000;

/** The keys of one experiment's record (store/keys.ts): its stream, its hash (appends stop once it is gone), its output budget. */
export interface EventLogKeys {
  stream: string;
  exp: string;
  budget: string;
}

export class EventLog {
  constructor(
    private readonly redis: Redis,
    readonly keys: EventLogKeys,
  ) {}

  static of(redis: Redis, prefix: string, experiment: string): EventLog {
    const k = orchKeys(prefix);
    return new EventLog(redis, {
      stream: k.events(experiment),
      exp: k.exp(experiment),
      budget: k.eventBudget(experiment),
    });
  }

  /** A reader of the stream at `stream` alone (its appends would write nothing: no experiment hash). */
  static reader(redis: Redis, stream: string): EventLog {
    return new EventLog(redis, { stream, exp: '', budget: '' });
  }

  /**
   * Appends one event; resolves the script's reply: the entry id, 'dropped' (the budget refused
   * an `output` event), or null (the experiment is gone).
   */
  async append(
    cls: AppendClass,
    tags: EventTags,
    event: string,
    overheadBytes: number,
    budget: OutputBudgetArgs | null,
  ): Promise<string | null> {
    const b = budget === null ? [0, 0, ''] : [budget.lines, budget.bytes, budget.note];
    const reply = await runScript(
      this.redis,
      'append-event',
      [this.keys.exp, this.keys.stream, this.keys.budget],
      [cls, ...b, overheadBytes, ...tagFields(tags), 'event', event],
    );
    return typeof reply === 'string' ? reply : null;
  }

  /** Counts output the worker dropped itself in the experiment's budget. */
  async countDropped(lines: number, bytes: number): Promise<void> {
    await runScript(
      this.redis,
      'append-event',
      [this.keys.exp, this.keys.stream, this.keys.budget],
      ['dropped', lines, bytes, '', 0],
    );
  }

  /**
   * The stream from `from` ('-': the start; `(<id>`: after id) to its end, a page at a time, in
   * order; `committed` says which attempt of each block is the committed one.
   */
  async *pages(
    committed: CommittedAttempts = {},
    from = '-',
    pageSize = EVENT_PAGE_SIZE,
  ): AsyncGenerator<StreamEvent[]> {
    let start = from;
    for (;;) {
      const page = (await this.redis.xrange(this.keys.stream, start, '+', 'COUNT', pageSize)) as [string, string[]][];
      if (page.length > 0) yield page.map(([id, flat]) => fromEntry(id, flat, committed));
      if (page.length < pageSize) return;
      start = `(${page[page.length - 1]![0]}`;
    }
  }

  /** Every event, in one array: for readers of a small stream (a test, a page of the dashboard). */
  async all(committed: CommittedAttempts = {}, from = '-'): Promise<StreamEvent[]> {
    const out: StreamEvent[] = [];
    for await (const page of this.pages(committed, from)) for (const e of page) out.push(e);
    return out;
  }

  /** The entries after `lastId`, at most `count`, waiting up to `blockMs` for one; [] when none came. */
  async follow(lastId: string, blockMs: number | null, count = 500): Promise<StreamEvent[]> {
    // null: no BLOCK at all. A short BLOCK is no substitute: Redis ends it at its next cron tick
    // (up to 100 ms at the default hz), and the connection waits behind it.
    const reply = (
      blockMs === null
        ? await this.redis.xread('COUNT', count, 'STREAMS', this.keys.stream, lastId)
        : await this.redis.xread('COUNT', count, 'BLOCK', blockMs, 'STREAMS', this.keys.stream, lastId)
    ) as [string, [string, string[]][]][] | null;
    const out: StreamEvent[] = [];
    for (const [, entries] of reply ?? []) for (const [id, flat] of entries) out.push(fromEntry(id, flat, {}));
    return out;
  }
}

/** block → the attempt committed (the result store's commit records). */
export type CommittedAttempts = Record<string, { attempt: number }>;

function tagFields(tags: EventTags): string[] {
  return [
    'block',
    String(tags.block),
    'attempt',
    String(tags.attempt),
    'epoch',
    String(tags.epoch),
    'host',
    tags.host,
    'card',
    tags.card,
    'rank',
    String(tags.rank),
  ];
}

/** The bytes the tags add to an entry, as the append script counts them (jobs/line-limit.ts). */
export function tagBytes(tags: EventTags): number {
  let bytes = 0;
  for (const f of tagFields(tags)) bytes += Buffer.byteLength(f);
  return bytes;
}

/** One stream entry as the record: the envelope from its fields, the body through its schema. */
export function fromEntry(id: string, flat: string[], committed: CommittedAttempts): StreamEvent {
  const f: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) f[flat[i]!] = flat[i + 1]!;
  const block = intOr(f.block, -1);
  const attempt = intOr(f.attempt, 0);
  return {
    id,
    block,
    attempt,
    epoch: intOr(f.epoch, 0),
    host: f.host ?? '',
    card: f.card ?? '',
    // the gang-wide worker events carry rank '': 0, as events.jsonl has always held them
    rank: intOr(f.rank, 0),
    committed: committed[String(block)]?.attempt === attempt,
    event: bodyFromText(f.event),
  };
}

function intOr(text: string | undefined, fallback: number): number {
  const n = text === undefined || text === '' ? NaN : Number(text);
  return Number.isInteger(n) ? n : fallback;
}

/** The chars of events.jsonl held before a write: one string of millions of events overruns V8's string limit. */
const CHUNK_CHARS = 1 << 20;

/**
 * Writes events to `file` as JSON lines (0600, its owner's alone, like every results file), a
 * chunk at a time as they come: memory holds a chunk and the page being written, never the file.
 * Returns the count written.
 */
export async function exportJsonl(
  file: string,
  pages: AsyncIterable<readonly StreamEvent[]> | Iterable<readonly StreamEvent[]>,
  onEvent?: (e: StreamEvent) => void,
): Promise<number> {
  // never through a link planted at the file (orchestrator/report/results-dir-writer.ts)
  const fh = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o600);
  let n = 0;
  try {
    await fh.chmod(0o600);
    let chunk = '';
    for await (const page of pages) {
      for (const e of page) {
        onEvent?.(e);
        chunk += `${JSON.stringify(e)}\n`;
        n++;
        if (chunk.length >= CHUNK_CHARS) {
          await fh.write(chunk);
          chunk = '';
        }
      }
    }
    if (chunk) await fh.write(chunk);
  } finally {
    await fh.close();
  }
  return n;
}

/** The longest events.jsonl line read: an event is at most 16 KiB of text in its envelope; a longer line is no event. */
export const MAX_JSONL_LINE_CHARS = 1024 * 1024;

/**
 * The events of an events.jsonl, line by line (a stream: the file is never one string), each
 * through the schema. A line that is not one is a UserInputError (EVENTS_FILE_INVALID) naming
 * the file, the line and the schema path. The lines are split here rather than by readline,
 * whose async iterator reads ahead of a slow consumer without bound: each chunk is parsed
 * before the next is read, and a line is held to MAX_JSONL_LINE_CHARS.
 */
export async function* importJsonl(file: string): AsyncGenerator<StreamEvent> {
  let n = 0;
  let rest = '';
  const one = (line: string): StreamEvent | null => {
    n++;
    if (line.trim() === '') return null;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch (err) {
      throw invalidLine(file, n, `not JSON (${messageOf(err)})`, line);
    }
    const r = parseStreamEvent(json);
    if (!r.ok) throw invalidLine(file, n, r.issues, line);
    return r.event;
  };
  for await (const chunk of createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 20 })) {
    const text = rest + (chunk as string);
    let start = 0;
    for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
      const e = one(text.slice(start, nl));
      start = nl + 1;
      if (e !== null) yield e;
    }
    rest = text.slice(start);
    if (rest.length > MAX_JSONL_LINE_CHARS)
      throw invalidLine(file, n + 1, `a line longer than ${MAX_JSONL_LINE_CHARS} chars (MAX_JSONL_LINE_CHARS)`, rest);
  }
  if (rest !== '') {
    const e = one(rest);
    if (e !== null) yield e;
  }
}

function invalidLine(file: string, line: number, why: string, text: string): UserInputError {
  return new UserInputError('EVENTS_FILE_INVALID', `${file}:${line}: not an event record: ${why}: ${quoteLine(text)}`, {
    hint: "events.jsonl is written by orch submit / orch report from Redis; restore the line from the run's copy, or rewrite the directory with orch report <id> against the Redis that ran it",
  });
}

/** The newest entry id of the stream at `key` ('0-0' when it is empty or absent): a follower reads after it. */
export async function lastStreamId(redis: Redis, key: string): Promise<string> {
  return (await redis.xrevrange(key, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0-0';
}

/** A blocking read's entries per stream: [key, [id, flat fields][]][] (null: none came within the block). */
export type StreamEntries = [string, [string, string[]][]][] | null;

/**
 * One blocking read (XREAD BLOCK `blockMs`, at most `count` entries a stream when given) of every
 * stream in `from` after its id. It holds `conn` while it blocks: give it a connection of its own,
 * not auto-pipelined (a blocking command in an auto-pipeline holds every command queued behind it).
 */
export async function readStreams(
  conn: Redis,
  from: readonly { key: string; id: string }[],
  opts: { blockMs: number; count?: number },
): Promise<StreamEntries> {
  const count = opts.count === undefined ? [] : (['COUNT', opts.count] as const);
  return (await conn.xread(
    ...(count as ['COUNT', number]),
    'BLOCK',
    opts.blockMs,
    'STREAMS',
    ...from.map((f) => f.key),
    ...from.map((f) => f.id),
  )) as StreamEntries;
}
