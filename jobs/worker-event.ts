/**
 * The worker's own events on the experiment stream (worker/event-stream.ts), beside the ranks'
 * lines: `{"v":1,"type":"worker","event":...}`, one shape per event.
 */
import { z } from 'zod';

const base = { v: z.literal(1), type: z.literal('worker') };

export const WorkerEventSchema = z.discriminatedUnion('event', [
  z.strictObject({ ...base, event: z.literal('block-start'), cards: z.array(z.string()), sequence: z.array(z.string()) }),
  z.strictObject({ ...base, event: z.literal('block-committed'), measured: z.int().min(0), not_run: z.int().min(0) }),
  z.strictObject({ ...base, event: z.literal('block-failed'), reason: z.string() }),
  z.strictObject({ ...base, event: z.literal('rank-exit'), code: z.int().nullable(), signal: z.string().nullable(), pid: z.int().nullable() }),
  z.strictObject({ ...base, event: z.literal('foreign-wait'), found: z.array(z.string()) }),
  z.strictObject({ ...base, event: z.literal('foreign-gone'), waited_ms: z.number().min(0) }),
]);
export type WorkerEvent = z.infer<typeof WorkerEventSchema>;
/** The fields of one event, without its envelope. */
export type WorkerEventFields<E extends WorkerEvent['event']> = Omit<Extract<WorkerEvent, { event: E }>, 'v' | 'type' | 'event'>;
