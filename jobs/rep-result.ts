/**
 * One committed rep (`<prefix>:experiment:<id>:results`, field `repKey`, jobs/rep-ref.ts): what the
 * worker commits (worker/block-executor.ts), the result store reads back and the statistics use.
 */
import { z } from 'zod';
import { RankAnswerSchema } from './gang-rep.ts';
import { RepSchema } from './graphrt-protocol.ts';
import { GRAPHRT_TOGGLES } from './graphrt-toggles.ts';
import { RepRefSchema } from './rep-ref.ts';

const count = z.int().min(0);

/** Which planned rep (jobs/rep-ref.ts) of which block attempt a committed record is: shared by reps and probes. */
export const RepIdentitySchema = RepRefSchema.extend({
  experiment: z.string(),
  attempt: z.int().positive(),
  epoch: count,
});

export const RepResultSchema = RepIdentitySchema.extend({
  /** Measured steps only, warm-up excluded; the gang's slowest rank per step. Finite numbers only. */
  step_ms: z.array(z.number()),
  /** `cpu`, `cuda` or `command` */
  backend: z.string(),
  mode: z.enum(['graph', 'eager']),
  launches_per_step: count.optional(),
  nodes: count.nullable().optional(),
  hashes: z.array(z.string()).optional(),
  /**
   * Toggles the arm turns on that had no effect on this backend or workload (any rank's graphrt
   * said so): the rep measured the arm without them.
   */
  unsupported: z.array(z.enum(GRAPHRT_TOGGLES)).optional(),
  host: z.string().optional(),
  cards: z.array(z.string()).optional(),
  /** jobs/clock-hygiene.ts: why the card was throttled during the rep (any rank); absent or empty when it was not */
  throttled: z.array(z.string()).optional(),
  /**
   * hygiene: discard: this is a re-run at the block's end (worker/hygiene-reruns.ts); each earlier
   * measurement of the rep that was thrown away, by why its card was throttled (empty: it was not,
   * its pair's rep was). Absent: measured once.
   */
  discarded_runs: z.array(z.array(z.string())).optional(),
  /**
   * Every rank's answer (rank order, every host of a spread gang): its rep line as it said it
   * (span, warm-up, settle, per-rank hashes, counters, clocks), its card, host and when its worker
   * read it. The fields above are the gang's view, reduced from these by jobs/gang-rep.ts; the
   * readers (card time, trace, launches) read these, never the event stream. Absent on older records.
   */
  answers: z.array(RankAnswerSchema).optional(),
  /** Older records: each graphrt rank's rep line alone (no longer written; `answers` replaces it). */
  ranks: z.array(RepSchema).optional(),
});
export type RepResult = z.infer<typeof RepResultSchema>;
