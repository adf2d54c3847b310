/**
 * The worker's own events on the experiment stream (worker/event-stream.ts), beside the ranks'
 * lines: `{"v":1,"type":"worker","event":...}`, one shape per event.
 */
import { z } from 'zod';
import { MachineRecordSchema } from './machine-record.ts';
import { SlurmProvenanceSchema } from './slurm-allocation.ts';

const base = { v: z.literal(1), type: z.literal('worker') };

export const WorkerEventSchema = z.discriminatedUnion('event', [
  // `machine`: the host and its GPUs as the block started (jobs/machine-record.ts); absent in older records
  // slurm: the allocation the worker runs in (jobs/slurm-allocation.ts), for the report's provenance
  z.strictObject({
    ...base,
    event: z.literal('block-start'),
    // the worker's clock as this start began: two starts of one attempt never print the same line,
    // so a line Redis holds twice is a re-sent append (ioredis sends an unanswered command again)
    started_ms: z.number().min(0).optional(),
    cards: z.array(z.string()),
    sequence: z.array(z.string()),
    machine: MachineRecordSchema.optional(),
    slurm: SlurmProvenanceSchema.optional(),
  }),
  z.strictObject({ ...base, event: z.literal('block-committed'), measured: z.int().min(0), not_run: z.int().min(0) }),
  z.strictObject({ ...base, event: z.literal('block-failed'), reason: z.string() }),
  z.strictObject({
    ...base,
    event: z.literal('rank-exit'),
    code: z.int().nullable(),
    signal: z.string().nullable(),
    pid: z.int().nullable(),
  }),
  // a command gang started again on another MASTER_PORT: `port`, rank 0's, was taken by another
  // process after the worker checked it (worker/command/stolen-port.ts); `reason` says so with rank 0's line
  z.strictObject({ ...base, event: z.literal('gang-restart'), port: z.int().min(1), reason: z.string() }),
  z.strictObject({ ...base, event: z.literal('foreign-wait'), found: z.array(z.string()) }),
  z.strictObject({ ...base, event: z.literal('foreign-gone'), waited_ms: z.number().min(0) }),
  // A command workload's build (worker/builds/build-cache.ts), one per request of this block:
  // asked for (its content address, recipe and git commit; null when not keyed by git) ...
  z.strictObject({
    ...base,
    event: z.literal('build-start'),
    key: z.string(),
    recipe: z.string(),
    commit: z.string().nullable(),
  }),
  // ... waiting for the host build lock, `position` in line by arrival (1: next; null: unknown without Redis) ...
  z.strictObject({ ...base, event: z.literal('build-wait'), key: z.string(), position: z.int().min(1).nullable() }),
  // ... and done: `ms` from build-start, of which `wait_ms` waiting for the lock.
  z.strictObject({
    ...base,
    event: z.literal('build-end'),
    key: z.string(),
    ms: z.number().min(0),
    wait_ms: z.number().min(0),
    ok: z.boolean(),
    outcome: z.enum(['cached', 'shared', 'built', 'failed']),
  }),
  // The build phase's host phase (worker/command/prepare-first.ts): a first block's rank process
  // started on `card` before any lease said `prepared` after `prepare_ms` (its own clock), or did not
  // (null, `why`: it ended, or ran past the hello timeout), once the build job ends.
  z.strictObject({
    ...base,
    event: z.literal('host-prepared'),
    card: z.string(),
    prepare_ms: z.number().min(0).nullable(),
    why: z.string().optional(),
  }),
  // A rank's output past a bound of jobs/line-limit.ts: `rep`, that rank's output of request
  // `id` (what it dropped, written before the answer); `experiment`, the budget of every rank
  // together was spent (written once, by store/lua/append-event.lua, in place of the first line
  // dropped: what follows is counted in the budget hash, not here).
  z.strictObject({
    ...base,
    event: z.literal('output-truncated'),
    scope: z.enum(['rep', 'experiment']),
    id: z.string().nullable(),
    limit_lines: z.int().min(0),
    limit_bytes: z.int().min(0),
    dropped_lines: z.int().min(0).nullable(),
    dropped_bytes: z.int().min(0).nullable(),
  }),
]);
export type WorkerEvent = z.infer<typeof WorkerEventSchema>;
/** The fields of one event, without its envelope. */
export type WorkerEventFields<E extends WorkerEvent['event']> = Omit<
  Extract<WorkerEvent, { event: E }>,
  'v' | 'type' | 'event'
>;

type BuildEventName = 'build-start' | 'build-wait' | 'build-end';
/** A build event without its envelope, as the build cache reports it for the stream. */
export type BuildEvent = { [E in BuildEventName]: { event: E } & WorkerEventFields<E> }[BuildEventName];
