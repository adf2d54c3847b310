/**
 * One event of an experiment's record (`<prefix>:experiment:<id>:events` in Redis, one line of
 * results/<id>/events.jsonl): where it happened (the envelope) and what was said (the body).
 * store/event-log.ts is the one reader and writer of both forms; every reader of the record
 * (progress, results, report, trace, the statistics) takes this type.
 *
 * Envelope: the stream entry id (`<ms>-<seq>`, the Redis server's clock), the block (-1: the
 * build phase), its attempt and epoch, the host, the card ('' for the worker's gang-wide events)
 * and the rank (0 for those), and whether the attempt is the block's committed one (only those
 * are counted).
 * Body: a rank's line (jobs/graphrt-protocol.ts, jobs/command-line.ts: hello, rep, gate, probe,
 * capture, error, a command's output line), a worker event (jobs/worker-event.ts), or the text
 * as the stream held it when it is none of those (an event cut for length, a line of another
 * protocol version), so nothing the stream held is lost; null for an entry without a body.
 */
import { z } from 'zod';
import { CommandLineSchema, type CommandRep } from './command-line.ts';
import { GraphrtLineSchema, type Rep } from './graphrt-protocol.ts';
import type { RankLine } from './rank-line.ts';
import { describeIssues } from './schema-issues.ts';
import { type WorkerEvent, WorkerEventSchema } from './worker-event.ts';

export const STREAM_ID_PATTERN = /^\d+-\d+$/;

export const StreamEnvelopeSchema = z.strictObject({
  id: z.string().regex(STREAM_ID_PATTERN, 'a stream entry id <ms>-<seq>'),
  block: z.int().min(-1),
  attempt: z.int().min(0),
  epoch: z.int().min(0),
  host: z.string(),
  card: z.string(),
  rank: z.int().min(0),
  committed: z.boolean(),
});
export type StreamEnvelope = z.infer<typeof StreamEnvelopeSchema>;

export const StreamEventBodySchema = z.union([
  GraphrtLineSchema,
  CommandLineSchema,
  WorkerEventSchema,
  z.string(),
  z.null(),
]);
export type StreamEventBody = RankLine | WorkerEvent | string | null;

export const StreamEventSchema = StreamEnvelopeSchema.extend({ event: StreamEventBodySchema });
export type StreamEvent = StreamEnvelope & { event: StreamEventBody };

/** A rep's final answer of one rank, whatever its runtime. */
export type RepLine = Rep | CommandRep;
/** An event whose body is a line of type T (`rep`, `hello`, `gate`...). */
export type LineEvent<T extends RankLine['type']> = StreamEvent & { event: Extract<RankLine, { type: T }> };

/** The body's type (`rep`, `worker`, ...), or null for a text or empty body. */
export function bodyType(e: StreamEvent): RankLine['type'] | 'worker' | null {
  return e.event !== null && typeof e.event === 'object' ? e.event.type : null;
}

export function isLine<T extends RankLine['type']>(e: StreamEvent, type: T): e is LineEvent<T> {
  return bodyType(e) === type;
}

/** The worker event named `name` this body is, or null. */
export function workerEventOf<N extends WorkerEvent['event']>(
  e: StreamEvent,
  name: N,
): Extract<WorkerEvent, { event: N }> | null {
  const b = e.event;
  return b !== null && typeof b === 'object' && b.type === 'worker' && b.event === name
    ? (b as Extract<WorkerEvent, { event: N }>)
    : null;
}

/** The ms part of a stream entry id: the Redis server's clock when the event was appended. */
export const streamMs = (id: string): number => Number(id.slice(0, id.indexOf('-')));

const STRING = [z.string()];
const NULL = [z.null()];
const WORKER = [WorkerEventSchema];
const GRAPHRT_FIRST = [GraphrtLineSchema, CommandLineSchema];
const COMMAND_FIRST = [CommandLineSchema, GraphrtLineSchema];

/**
 * The schemas a JSON body may be, most likely first: the worker's own by `type`, a command
 * runtime's line by its `backend`/`workload` or an output line, else graphrt's (a parse that
 * fails costs its error, so the likely one goes first).
 */
function bodySchemas(json: unknown): z.ZodType[] {
  if (typeof json === 'string') return STRING;
  if (json === null) return NULL;
  if (typeof json !== 'object') return GRAPHRT_FIRST;
  const o = json as { type?: unknown; backend?: unknown; workload?: unknown; code?: unknown };
  if (o.type === 'worker') return WORKER;
  if (o.type === 'output' || o.backend === 'command' || o.workload === 'command') return COMMAND_FIRST;
  return GRAPHRT_FIRST;
}

/**
 * A body from the text the stream entry holds: parsed through its schema, else the text itself
 * (lenient: Redis holds what the ranks printed, cut for length or of another version).
 */
export function bodyFromText(text: string | undefined): StreamEventBody {
  if (text === undefined) return null;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return text;
  }
  if (typeof json !== 'object' || json === null) return text;
  for (const schema of bodySchemas(json)) {
    const r = schema.safeParse(json);
    if (r.success) return r.data as StreamEventBody;
  }
  return text;
}

export type ParsedStreamEvent = { ok: true; event: StreamEvent } | { ok: false; issues: string };

/**
 * One record as events.jsonl holds it, strictly: the envelope, and a body that is one of the
 * schemas or a text (what the writer keeps of a line no schema took). The issues name the
 * schema path (`event.step_ms.2: ...`); of a body that matches no schema, those of the closest.
 */
const EnvelopeOfAnyBody = StreamEnvelopeSchema.extend({ event: z.unknown() });

export function parseStreamEvent(json: unknown): ParsedStreamEvent {
  const env = EnvelopeOfAnyBody.safeParse(json);
  if (!env.success) return { ok: false, issues: describeIssues(env.error) };
  let best: z.ZodError | null = null;
  for (const schema of bodySchemas(env.data.event)) {
    const r = schema.safeParse(env.data.event);
    if (r.success) return { ok: true, event: { ...env.data, event: r.data as StreamEventBody } };
    if (best === null || r.error.issues.length < best.issues.length) best = r.error;
  }
  return { ok: false, issues: describeIssues(best!, 'event') };
}
