/**
 * Everything an experiment left in Redis: the registered spec and plan, the block states, the
 * committed reps and gates, the reps recorded as not run (`collectRecords`), and its event record
 * (store/event-log.ts), which a writer streams page by page (`EventLog.pages`) with the commits
 * saying which attempt of each block counts. `collectResults` adds every event in one array, for
 * the readers of a small experiment (a dashboard page, a trace).
 */
import type { Redis } from 'ioredis';
import type { CommitRecord } from '../../jobs/commit-record.ts';
import { UserInputError } from '../../jobs/errors.ts';
import type { FailedRecord } from '../../jobs/failed-rep.ts';
import type { GateResult } from '../../jobs/gate-result.ts';
import type { ProbeRecord } from '../../jobs/probe-record.ts';
import type { RankOutputTail } from '../../jobs/rank-output-tail.ts';
import type { RepResult } from '../../jobs/rep-result.ts';
import type { StreamEvent } from '../../jobs/stream-event.ts';
import { EventLog } from '../../store/event-log.ts';
import { type BlockState, type ExperimentRecord, ExperimentStore } from '../../store/experiment-store.ts';
import { ResultStore } from '../../store/result-store.ts';

export type { StreamEvent, StreamEventBody } from '../../jobs/stream-event.ts';

export interface CollectedRecords {
  exp: ExperimentRecord;
  blocks: BlockState[];
  /** field `<block>/<arm>/<rep>` → RepResult */
  reps: Record<string, RepResult>;
  failed: Record<string, FailedRecord>;
  gates: Record<string, GateResult>;
  commits: Record<string, CommitRecord>;
  /** design probe: the committed attempts' probe records, field `<block>/<arm>/<rep>` */
  probes: Record<string, ProbeRecord>;
  /** the last lines of the ranks that failed, field `<block>/<attempt>/<rank>` (jobs/rank-output-tail.ts) */
  rankOutputs: Record<string, RankOutputTail>;
  /** the experiment's event record */
  log: EventLog;
}

export interface CollectedResults extends CollectedRecords {
  events: StreamEvent[];
}

export async function collectRecords(redis: Redis, prefix: string, id: string): Promise<CollectedRecords> {
  const store = new ExperimentStore(redis, prefix);
  const exp = await store.get(id);
  if (!exp)
    throw new UserInputError('NO_SUCH_EXPERIMENT', `no experiment "${id}" in this Redis`, {
      hint: 'run orch status to list experiments',
    });
  const rs = new ResultStore(redis, { prefix });
  const [blocks, reps, failed, gates, commits, probes, rankOutputs] = await Promise.all([
    store.blocks(id),
    rs.results(id),
    rs.failed(id),
    rs.gates(id),
    rs.commits(id),
    rs.probes(id),
    rs.rankOutputs(id),
  ]);
  return { exp, blocks, reps, failed, gates, commits, probes, rankOutputs, log: EventLog.of(redis, prefix, id) };
}

export async function collectResults(redis: Redis, prefix: string, id: string): Promise<CollectedResults> {
  const c = await collectRecords(redis, prefix, id);
  return { ...c, events: await c.log.all(c.commits) };
}

/** The stream at `key` from `from` ('-', or `(<id>`: after it), in one array, through the record's owner. */
export async function readEvents(
  redis: Redis,
  key: string,
  commits: Record<string, { attempt: number }>,
  from = '-',
): Promise<StreamEvent[]> {
  return EventLog.reader(redis, key).all(commits, from);
}
