/**
 * Everything an experiment left in Redis, read once: the registered spec and plan, the block
 * states, the committed reps and gates, the reps recorded as not run, and every event of the
 * stream — committed or not — tagged with whether its attempt is the block's committed one.
 */
import type { Redis } from 'ioredis';
import type { CommitRecord } from '../../jobs/commit-record.ts';
import { UserInputError } from '../../jobs/errors.ts';
import type { FailedRecord } from '../../jobs/failed-rep.ts';
import type { GateResult } from '../../jobs/gate-result.ts';
import { CommandLineSchema, type CommandLine } from '../../jobs/command-line.ts';
import { GraphrtLineSchema, type GraphrtLine } from '../../jobs/graphrt-protocol.ts';
import type { ProbeRecord } from '../../jobs/probe-record.ts';
import type { RepResult } from '../../jobs/rep-result.ts';
import { WorkerEventSchema, type WorkerEvent } from '../../jobs/worker-event.ts';
import { ExperimentStore, type BlockState, type ExperimentRecord } from '../../store/experiment-store.ts';
import { ResultStore } from '../../store/result-store.ts';

export interface StreamEvent {
  /** the stream entry id */
  id: string;
  block: number;
  attempt: number;
  epoch: number;
  host: string;
  card: string;
  rank: number;
  /** true when this attempt is the block's committed one (only those are counted) */
  committed: boolean;
  event: StreamEventBody;
}

/**
 * What an entry held, through its schema: a worker event, a graphrt line, a command rank's line;
 * anything else (an event cut for length, a line of another version) verbatim as its text, so
 * nothing the stream held is dropped; null for an entry without an event.
 */
export type StreamEventBody = WorkerEvent | GraphrtLine | CommandLine | string | null;

export function parseEventBody(text: string | undefined): StreamEventBody {
  if (text === undefined) return null;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return text;
  }
  const type = typeof json === 'object' && json !== null ? (json as { type?: unknown }).type : undefined;
  for (const schema of type === 'worker' ? [WorkerEventSchema] : [GraphrtLineSchema, CommandLineSchema]) {
    const r = schema.safeParse(json);
    if (r.success) return r.data;
  }
  return text;
}

export interface CollectedResults {
  exp: ExperimentRecord;
  blocks: BlockState[];
  /** field `<block>/<arm>/<rep>` → RepResult */
  reps: Record<string, RepResult>;
  failed: Record<string, FailedRecord>;
  gates: Record<string, GateResult>;
  commits: Record<string, CommitRecord>;
  /** design probe: the committed attempts' probe records, field `<block>/<arm>/<rep>` */
  probes: Record<string, ProbeRecord>;
  events: StreamEvent[];
}

export async function collectResults(redis: Redis, prefix: string, id: string): Promise<CollectedResults> {
  const store = new ExperimentStore(redis, prefix);
  const exp = await store.get(id);
  if (!exp) throw new UserInputError('NO_SUCH_EXPERIMENT', `no experiment "${id}" in this Redis`, { hint: 'run orch status to list experiments' });
  const rs = new ResultStore(redis, { prefix });
  const [blocks, reps, failed, gates, commits, probes] = await Promise.all([
    store.blocks(id),
    rs.results(id),
    rs.failed(id),
    rs.gates(id),
    rs.commits(id),
    rs.probes(id),
  ]);
  return { exp, blocks, reps, failed, gates, commits, probes, events: await readEvents(redis, store.keys.events(id), commits) };
}

/** The whole stream, in pages, in order. */
export async function readEvents(
  redis: Redis,
  key: string,
  commits: Record<string, { attempt: number }>,
  from = '-',
  count = 1000,
): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  let start = from;
  for (;;) {
    const page = (await redis.xrange(key, start, '+', 'COUNT', count)) as [string, string[]][];
    for (const [id, flat] of page) out.push(toEvent(id, flat, commits));
    if (page.length < count) return out;
    start = `(${page[page.length - 1]![0]}`;
  }
}

export function toEvent(id: string, flat: string[], commits: Record<string, { attempt: number }>): StreamEvent {
  const f: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) f[flat[i]!] = flat[i + 1]!;
  const block = Number(f.block ?? -1);
  const attempt = Number(f.attempt ?? 0);
  const event = parseEventBody(f.event);
  return {
    id,
    block,
    attempt,
    epoch: Number(f.epoch ?? 0),
    host: f.host ?? '',
    card: f.card ?? '',
    rank: Number(f.rank ?? 0),
    committed: commits[String(block)]?.attempt === attempt,
    event,
  };
}
