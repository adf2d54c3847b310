/**
 * How each rank of a committed attempt started, committed with the block (jobs/commit-record.ts
 * `startup`) so that card time and block sizing read it from the committed record, never from the
 * event stream. `hello_ms` is the worker's clock from the attempt's block-start to this rank's
 * hello: the card time the rank's start cost inside the lease. The rest is what the rank said in
 * its hello (a command rank's `started` and its program's `prepare_ms`/`setup_ms`; graphrt says
 * none of it).
 */
import { z } from 'zod';
import type { RankHelloLine } from './rank-line.ts';

export const RankStartupSchema = z.strictObject({
  rank: z.int().min(0).meta({ unit: 'index' }),
  card: z.string().min(1),
  /** block-start → this rank's hello, the worker's clock (ms) */
  hello_ms: z.number().min(0).meta({ unit: 'ms' }),
  /** adopted from the host phase: prepare() ran before the lease (worker/command/prepared-slots.ts) */
  host_phase: z.boolean().optional(),
  /** why a rank meant for the host phase started inside the lease */
  why: z.string().optional(),
  /** its build's compiler caches held something when it started (worker/command/rank-caches.ts) */
  caches: z.enum(['warm', 'cold']).optional(),
  /** adopted from the host phase: how long the rank waited in its lease for that prepare() to end (worker's clock) */
  prepare_waited_ms: z.number().min(0).meta({ unit: 'ms' }).optional(),
  /** the program's prepare() and setup(), its own clock (ms) */
  prepare_ms: z.number().min(0).meta({ unit: 'ms' }).optional(),
  setup_ms: z.number().min(0).meta({ unit: 'ms' }).optional(),
});
export type RankStartup = z.infer<typeof RankStartupSchema>;

/** One rank's start from its hello line, `helloAt` and `started` epoch ms on the worker's clock. */
export function rankStartup(
  hello: RankHelloLine,
  rank: number,
  card: string,
  started: number,
  helloAt: number,
): RankStartup {
  const command = hello.backend === 'command' ? hello : null;
  const program = command?.program;
  return {
    rank,
    card,
    hello_ms: Math.max(helloAt - started, 0),
    ...(command?.started === undefined
      ? {}
      : {
          host_phase: command.started.host_phase,
          ...(command.started.why === undefined ? {} : { why: command.started.why }),
          caches: command.started.caches,
          ...(command.started.prepare_waited_ms === undefined
            ? {}
            : { prepare_waited_ms: command.started.prepare_waited_ms }),
        }),
    ...(program?.prepare_ms === undefined ? {} : { prepare_ms: program.prepare_ms }),
    ...(program?.setup_ms === undefined ? {} : { setup_ms: program.setup_ms }),
  };
}
