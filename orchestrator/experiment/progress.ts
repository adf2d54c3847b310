/**
 * Live progress of an experiment: per block the reps done in the current attempt out of the
 * planned ones, and the latest rep's metrics, from the running attempts' live count
 * (store/rep-progress.ts, noted by the worker as each rep is measured), never the event stream's
 * copy of a rep line (cut at 16 KiB, or dropped). Once a block ended, its reps done are the
 * committed ones (a cancelled block keeps what it measured before the cancel; a rep aborted by it
 * answered nothing). The stream is followed for the builds' progress and as the wake-up of a
 * watcher. Used by `orch watch` and `orch submit --watch`. A submit that waits without --watch
 * says every WAIT_REPORT_MS why it still waits (`waitingReason`): Redis refusing writes, no
 * scheduler leading, the blocks' reasons.
 */
import type { Redis } from 'ioredis';
import { UserInputError } from '../../jobs/errors.ts';
import { formatBytes } from '../../jobs/limits.ts';
import type { StreamEvent } from '../../jobs/stream-event.ts';
import type { WorkerEvent } from '../../jobs/worker-event.ts';
import { EventLog } from '../../store/event-log.ts';
import {
  type BlockState,
  type ExperimentRecord,
  type ExperimentState,
  ExperimentStore,
  TERMINAL_BLOCK_PHASES,
  TERMINAL_EXPERIMENT_STATES,
} from '../../store/experiment-store.ts';
import { orchKeys } from '../../store/keys.ts';
import { RedisInstance } from '../../store/redis-instance.ts';
import { isRedisOom } from '../../store/redis-oom.ts';
import { type ExperimentProgress, type LatestRep, RepProgress } from '../../store/rep-progress.ts';
import { readStepHistory } from '../../store/step-history.ts';
import { historyRepMs, workloadKey } from '../scheduler/expected-duration.ts';
import { type Eta, estimateRemaining, formatDuration, formatEta, RepClock } from './eta.ts';

export type { LatestRep } from '../../store/rep-progress.ts';

export interface BlockProgress {
  block: number;
  phase: string;
  attempt: number;
  done: number;
  planned: number;
  latest: LatestRep | null;
  why: string | null;
  /** the time this block still needs (eta.ts), null when nothing is measured yet */
  eta: Eta | null;
}

/**
 * One build the experiment waited for, from its build events (worker/builds/build-cache.ts): those
 * of the build phase, made on a host before any card of it was leased (block -1,
 * orchestrator/scheduler/build-phase.ts), and those a block's ranks asked for.
 */
export interface BuildProgress {
  host: string;
  key: string;
  commit: string | null;
  state: 'building' | 'waiting for the build lock' | 'built' | 'shared' | 'cached' | 'failed';
  /** waiting for the build lock: the place in line */
  position: number | null;
  /** ended: from build-start */
  ms: number | null;
}

export interface Progress {
  experiment: string;
  state: ExperimentState;
  blocks: BlockProgress[];
  builds?: BuildProgress[];
  /** since the experiment was submitted */
  elapsedMs: number;
  /** the time left for the whole experiment (eta.ts), null when nothing is measured yet */
  eta: Eta | null;
}

/**
 * Reps done in an experiment's running blocks and not committed yet (0 when no block runs): what
 * `orch status` and the dashboard's list show beside the committed count, marked as such, so a
 * running block does not read 0 until its end. Read from the worker's live count
 * (store/rep-progress.ts), never counted as measured. `blocks`: the experiment's block states
 * where the caller has read them already.
 */
export async function uncommittedRepsOf(
  redis: Redis,
  prefix: string,
  exp: ExperimentRecord,
  blocks?: readonly BlockState[],
): Promise<number> {
  const states = blocks ?? (await new ExperimentStore(redis, prefix).blocks(exp.id));
  if (!states.some((b) => b.phase === 'running')) return 0;
  return new ProgressTracker(redis, prefix, exp).uncommittedReps(states);
}

export class ProgressTracker {
  private lastId = '0-0';
  private readonly builds = new Map<string, BuildProgress>();
  /** measured reps of each ended block: fixed once it ended */
  private readonly ended = new Map<number, number>();
  private readonly clock = new RepClock();
  private history: Promise<{ ms: number; reps: number } | null> | null = null;
  private readonly store: ExperimentStore;
  private readonly log: EventLog;
  private readonly live: RepProgress;
  private readonly resultsKey: string;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private exp: ExperimentRecord,
  ) {
    this.store = new ExperimentStore(redis, prefix);
    this.log = EventLog.of(redis, prefix, exp.id);
    this.live = new RepProgress(redis, prefix);
    this.resultsKey = orchKeys(prefix).results(exp.id);
  }

  /** The committed reps of each ended block (one read of the results' fields while any is new). */
  private async endedCounts(blocks: BlockState[]): Promise<void> {
    const fresh = blocks.filter((b) => TERMINAL_BLOCK_PHASES.has(b.phase) && !this.ended.has(b.block));
    if (fresh.length === 0) return;
    const fields = await this.redis.hkeys(this.resultsKey);
    for (const b of fresh) this.ended.set(b.block, fields.filter((f) => f.startsWith(`${b.block}/`)).length);
  }

  /** The events since the last poll, waiting up to `blockMs` for one (null: not at all). */
  async poll(blockMs: number | null): Promise<StreamEvent[]> {
    const out = await this.log.follow(this.lastId, blockMs);
    for (const e of out) {
      this.lastId = e.id;
      this.fold(e);
    }
    return out;
  }

  /**
   * The reps the attempts now running have measured: not committed yet (an attempt commits its
   * block at its end, or never). `orch status` prints them apart from the committed count, marked
   * as such.
   */
  async uncommittedReps(blocks: readonly BlockState[]): Promise<number> {
    const live = await this.live.read(this.exp.id);
    return blocks
      .filter((b) => b.phase === 'running')
      .reduce((n, b) => n + (live.attempts.get(`${b.block}/${b.attempt}`)?.done ?? 0), 0);
  }

  /** The builds' events (the reps are counted by store/rep-progress.ts, not here). */
  private fold(e: StreamEvent): void {
    const line = e.event;
    if (line !== null && typeof line === 'object' && line.type === 'worker') this.foldBuild(e.host, line);
  }

  /** A build's events, one entry per host and key; a cache hit after a build keeps the build's line. */
  private foldBuild(host: string, line: WorkerEvent): void {
    if (line.event !== 'build-start' && line.event !== 'build-wait' && line.event !== 'build-end') return;
    const id = `${host}/${line.key}`;
    const b = this.builds.get(id);
    if (line.event === 'build-start') {
      if (!b)
        this.builds.set(id, { host, key: line.key, commit: line.commit, state: 'building', position: null, ms: null });
    } else if (line.event === 'build-wait') {
      if (b?.state === 'building')
        this.builds.set(id, { ...b, state: 'waiting for the build lock', position: line.position });
    } else if (b && (b.ms === null || line.outcome !== 'cached')) {
      this.builds.set(id, { ...b, state: line.outcome, position: null, ms: line.ms });
    }
  }

  /** Each running attempt's count as it grows: the rep times the ETA rests on. */
  private time(live: ExperimentProgress): void {
    for (const [field, p] of live.attempts) {
      const [block, attempt] = field.split('/').map(Number);
      this.clock.observe(block as number, attempt as number, p.done, p.at);
    }
  }

  /** The workload's past rep time, read once: it stands in until this experiment measured a rep. */
  private historyRep(): Promise<{ ms: number; reps: number } | null> {
    this.history ??= readStepHistory(this.redis, this.prefix, workloadKey(this.exp.spec))
      .then((h) => historyRepMs(this.exp.spec, h))
      .catch(() => null);
    return this.history;
  }

  async snapshot(now = Date.now()): Promise<Progress> {
    // auto sizing regroups the blocks after the first once it committed: their planned reps come from the sized plan
    if (this.exp.plan.reps_per_block === 'auto' && this.exp.plan.sized === undefined)
      this.exp = (await this.store.get(this.exp.id)) ?? this.exp;
    const [state, blocks, history, live] = await Promise.all([
      this.store.state(this.exp.id),
      this.store.blocks(this.exp.id),
      this.historyRep(),
      this.live.read(this.exp.id),
    ]);
    await this.endedCounts(blocks);
    this.time(live);
    const repMs = this.clock.measured();
    const rows = blocks.map((b: BlockState): BlockProgress => {
      const planned = this.exp.plan.blocks.find((p) => p.index === b.block)?.sequence.length ?? 0;
      const done =
        this.ended.get(b.block) ?? Math.min(planned, live.attempts.get(`${b.block}/${b.attempt}`)?.done ?? 0);
      const left = TERMINAL_BLOCK_PHASES.has(b.phase) ? 0 : planned - done;
      return {
        block: b.block,
        phase: b.phase,
        attempt: b.attempt,
        done,
        planned,
        latest: live.latest.get(b.block) ?? null,
        why: b.why,
        eta: estimateRemaining({ repsLeft: left, parallel: 1, repMs, historyRepMs: history }),
      };
    });
    const repsLeft = rows.reduce(
      (n, b) => n + (TERMINAL_BLOCK_PHASES.has(b.phase as BlockState['phase']) ? 0 : b.planned - b.done),
      0,
    );
    const parallel = rows.filter((b) => b.phase === 'running').length;
    return {
      experiment: this.exp.id,
      state: state ?? 'queued',
      blocks: rows,
      ...(this.builds.size > 0 ? { builds: [...this.builds.values()] } : {}),
      elapsedMs: Math.max(0, now - this.exp.created),
      eta: isEnded(state) ? null : estimateRemaining({ repsLeft, parallel, repMs, historyRepMs: history }),
    };
  }
}

export function isEnded(state: ExperimentState | null): boolean {
  return state !== null && TERMINAL_EXPERIMENT_STATES.has(state);
}

/** How often a submit that waits without --watch says why it still waits. */
export const WAIT_REPORT_MS = 15_000;

/**
 * Why an experiment that has not ended still waits, in one line: Redis refusing writes (nothing
 * can move until memory is freed), no scheduler leading, else what its blocks do (each waiting
 * block's reason from the grant pass, the running ones, the ended ones).
 */
export async function waitingReason(redis: Redis, prefix: string, p: Progress): Promise<string> {
  const keys = orchKeys(prefix);
  const [memory, leader] = await Promise.all([
    redis.info('memory').catch(() => ''),
    redis.exists(keys.sched.leader).catch(() => 1),
  ]);
  const used = Number(/used_memory:(\d+)/.exec(memory)?.[1] ?? 0);
  const max = Number(/maxmemory:(\d+)/.exec(memory)?.[1] ?? 0);
  if (max > 0 && used >= max) {
    return `waiting: Redis refuses writes (OOM: used ${formatBytes(used)} of maxmemory ${formatBytes(max)}), so no block can start, end or commit; raise maxmemory, or orch cancel ${p.experiment}`;
  }
  if (leader === 0) return 'waiting: no scheduler leads (start `orch serve` against this Redis and prefix)';
  const ended = p.blocks.filter((b) => TERMINAL_BLOCK_PHASES.has(b.phase as BlockState['phase'])).length;
  const parts: string[] = [];
  const waiting = p.blocks.filter((b) => b.phase === 'waiting');
  for (const b of waiting.slice(0, 3))
    parts.push(
      `block ${b.block} ${b.attempt > 0 ? `waiting for attempt ${b.attempt + 1}` : 'queued'}: ${b.why ?? 'no card granted yet'}`,
    );
  if (waiting.length > 3) parts.push(`${waiting.length - 3} more blocks waiting`);
  const running = p.blocks.filter((b) => b.phase === 'running');
  if (running.length > 0)
    parts.push(
      `${running.length} block${running.length === 1 ? '' : 's'} running (${running
        .slice(0, 3)
        .map((b) => `block ${b.block} attempt ${b.attempt}: ${b.done}/${b.planned} reps`)
        .join(', ')})`,
    );
  parts.push(`${ended}/${p.blocks.length} blocks ended`);
  parts.push(`elapsed ${formatDuration(p.elapsedMs)}, ${formatEta(p.eta)}`);
  return `waiting: experiment ${p.state}; ${parts.join('; ')}`;
}

/**
 * Waits until the experiment ended; `onProgress` (if given) gets a snapshot at most every
 * `everyMs` and on every rep; `onWaiting` (if given) gets `waitingReason` every `waitReportMs`
 * (WAIT_REPORT_MS) while it waits. Returns the final state.
 */
export async function waitForEnd(
  redis: Redis,
  prefix: string,
  exp: ExperimentRecord,
  opts: {
    onProgress?: (p: Progress, events: StreamEvent[]) => void;
    everyMs?: number;
    signal?: AbortSignal;
    onWaiting?: (why: string) => void;
    waitReportMs?: number;
  } = {},
): Promise<ExperimentState> {
  // XREAD BLOCK holds its connection: the tracker gets its own.
  const conn = redis.duplicate();
  const tracker = new ProgressTracker(conn, prefix, exp);
  const store = new ExperimentStore(redis, prefix);
  const instance = new RedisInstance(redis, prefix);
  // a full Redis refuses even the marker's SET NX; the wait only reads, and says why it waits
  await instance.claim().catch((err: unknown) => {
    if (!isRedisOom(err)) throw err;
  });
  const every = opts.everyMs ?? 500;
  const reportEvery = opts.waitReportMs ?? WAIT_REPORT_MS;
  let last = 0;
  let reported = Date.now();
  try {
    for (;;) {
      if (opts.signal?.aborted) return (await store.state(exp.id)) ?? 'queued';
      const events = opts.onProgress ? await tracker.poll(every) : [];
      if (!opts.onProgress) await new Promise((r) => setTimeout(r, 250));
      const state = await store.state(exp.id);
      // the experiment is gone: waiting longer would wait forever
      if (state === null) throw await goneError(instance, exp.id);
      if (opts.onProgress && (events.length > 0 || Date.now() - last >= every || isEnded(state))) {
        last = Date.now();
        opts.onProgress(await tracker.snapshot(), events);
      }
      if (isEnded(state)) return state!;
      if (opts.onWaiting && Date.now() - reported >= reportEvery) {
        reported = Date.now();
        opts.onWaiting(await waitingReason(redis, prefix, await tracker.snapshot()));
      }
    }
  } finally {
    conn.disconnect();
  }
}

/**
 * `output: 123 456 lines (12.0 MiB) of the ranks' output were not stored …`, or null when
 * nothing was dropped: the report of the output bounds (jobs/line-limit.ts), once, at the end.
 */
export function droppedOutputLine(b: {
  lines: number;
  bytes: number;
  dropped_lines: number;
  dropped_bytes: number;
}): string | null {
  if (b.dropped_lines === 0) return null;
  return `output truncated: ${b.dropped_lines} lines (${formatBytes(b.dropped_bytes)}) of the ranks' output were not stored in the event stream (bounds: OUTPUT_PER_REP, OUTPUT_PER_EXPERIMENT in jobs/line-limit.ts); ${b.lines} lines (${formatBytes(b.bytes)}) were stored\n`;
}

async function goneError(instance: RedisInstance, id: string): Promise<UserInputError> {
  const lost = await instance.lostSinceLastCheck().catch(() => false);
  return new UserInputError(
    'REDIS_DATA_LOST',
    lost
      ? `experiment ${id} no longer exists: Redis restarted without its data (its instance marker changed), so its plan, leases and results are gone`
      : `experiment ${id} no longer exists in Redis (its keys were deleted)`,
    { hint: 'give Redis persistence (appendonly yes in redis.conf) and submit the spec again' },
  );
}
