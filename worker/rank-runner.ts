/**
 * The rank-runner seam of the block executor (worker/block-executor.ts).
 *
 * A block runs on a gang of leased cards, one rank per card. The executor drives every rank the
 * same way: start it (it must take the card's host-guard flock at `lockPath` and hold it for as
 * long as it can touch the card), wait for `ready`, send ops (`identity` gates, then `rep`s) one
 * at a time, forward every line to the experiment stream, and on any failure `kill()` the gang.
 *
 * Implementations:
 * - GraphrtRunner (worker/graphrt-runner.ts): one resident `graphrt serve` per rank, requests
 *   made by jobs/native-args.ts; when the block's arms run graphrt of several builds, one per build
 *   on the card, sharing the card's lock (handed down as one open file description), each
 *   request to its arm's build.
 * - CommandRankRunner (worker/command/) plugs in here: its `start` may return a
 *   handle whose `request` spawns one process per rep (run-command-rep.ts) under the card lock and
 *   answers with a protocol-shaped `rep` line ({ type: 'rep', arm, step_ms, backend, mode, ... });
 *   `ready` may resolve at once and `exited` only after `close`/`kill`.
 *
 * Lines are parsed with their schemas (jobs/rank-line.ts) before anything reads them. A handle must
 * reject a pending `request` with a RankExitError when its process ends before answering (a
 * RankProtocolError when it broke the protocol), and resolve `exited` exactly once.
 */

import type { Logger } from 'pino';
import type { BlockArm, BlockJob } from '../jobs/block-job.ts';
import type { Card } from '../jobs/card.ts';
import { OrchError } from '../jobs/errors.ts';
import { DETERMINISTIC_EXITS } from '../jobs/graphrt-exit-codes.ts';
import type { RankRendezvous } from '../jobs/native-args.ts';
import type { RankHelloLine, RankLine } from '../jobs/rank-line.ts';
import type { RankOutput } from '../jobs/rank-output-tail.ts';
import { escapeRankText } from '../jobs/rank-text.ts';
import type { BuildEvent } from '../jobs/worker-event.ts';
import type { CommandGang } from './command/command-gang.ts';

export type { RankLine } from '../jobs/rank-line.ts';

export interface RankStart {
  job: BlockJob;
  rank: number;
  world: number;
  card: Card;
  /** the host guard: this card's flock file */
  lockPath: string;
  /** world > 1: where the block attempt's ranks meet (a socket path, or tcp across hosts) */
  rendezvous?: RankRendezvous;
  /** a command workload's gang: torchrun's environment and the exchange (worker/command/command-gang.ts) */
  commandGang?: CommandGang;
  log: Logger;
  /** every line of the rank that passed its schema, as it arrives (hello included); `raw` as printed */
  onLine: (line: RankLine, raw: string) => void;
  /** a build the rank waits for (command workloads): its events, for the stream's worker track */
  onBuild?: (e: BuildEvent) => void;
}

export interface RankOp {
  id: string;
  /** `trace`: the trace probe of a resident command rank (ranklib/PROTOCOL.md "trace") */
  op: 'rep' | 'identity' | 'probe' | 'trace';
  arm: BlockArm;
}

export interface RankExit {
  rank: number;
  card: string;
  pid: number | null;
  code: number | null;
  signal: string | null;
  /** the last `error` line (`CODE: message`), else the last stderr line, else null */
  lastError: string | null;
  /** the worker ended the rank because it broke the protocol (a malformed, overlong or mismatched line): why */
  fault: string | null;
  /**
   * false: the program's exit codes mean nothing to orch (a user's program: its code 3 is not
   * graphrt's), so an exit is retried as any death is; absent: graphrt's (native/PROTOCOL.md)
   */
  codesKnown?: false;
  /** true: it ended before its hello line (before it served a request) */
  beforeHello?: true;
}

export interface RankHandle {
  readonly rank: number;
  readonly card: Card;
  /** the OS pid holding the card (for the foreign-process check); null when none is running */
  pids(): number[];
  /** resolves with the hello line; rejects with RankExitError if the rank dies first */
  ready: Promise<RankHelloLine>;
  /**
   * Once ready: every process's hello (a rank whose arms run several builds runs one process per
   * build, each with its own graphrt version). Absent: `ready`'s hello alone.
   */
  processHellos?(): readonly RankHelloLine[];
  /** sends one op; resolves with its final line (rep, gate or error) */
  request(op: RankOp, timeoutMs: number): Promise<RankLine>;
  /**
   * Whether `next` may be sent while `current` is still being answered (a one-deep pipeline: the
   * same process reads `next` once it has answered `current`, so no turnaround of the worker
   * falls between them). Absent: one request at a time.
   */
  queues?(current: RankOp, next: RankOp): boolean;
  /** resolves once the rank's processes are gone */
  exited: Promise<RankExit>;
  /** SIGKILL to the rank's process group, now */
  kill(): void;
  /** the last lines it printed (jobs/rank-output-tail.ts), for the record of its failure; absent: not kept */
  output?(): RankOutput;
  /** graceful end (graphrt: close stdin), then kill() after graceMs */
  close(graceMs: number): Promise<RankExit>;
}

export interface RankRunner {
  start(s: RankStart): RankHandle;
}

/** A rank process ended before the block did: the message is what reaches BullMQ's failedReason. */
export class RankExitError extends OrchError {
  readonly exit: RankExit;
  /** true when a retry would fail the same way: code RANK_EXITED, else RANK_DIED (jobs/error-codes.ts) */
  readonly deterministic: boolean;

  constructor(exit: RankExit, context = '') {
    // a rank ended for breaking the protocol would break it again: never retried
    // a user's program that exited 0 before hello never called serve(): no retry serves either
    const neverServed =
      exit.fault === null &&
      exit.beforeHello === true &&
      exit.codesKnown === false &&
      exit.code === 0 &&
      exit.signal === null;
    const deterministic =
      neverServed ||
      exit.fault !== null ||
      (exit.codesKnown !== false && exit.signal === null && exit.code !== null && DETERMINISTIC_EXITS.has(exit.code));
    // the codes written in super()'s first argument: test/errors/error-codes.test.ts reads them there
    super(
      neverServed
        ? 'RANK_NEVER_SERVED'
        : exit.fault !== null
          ? 'RANK_PROTOCOL'
          : deterministic
            ? 'RANK_EXITED'
            : 'RANK_DIED',
      `${describeRankExit(exit)}${neverServed ? NEVER_SERVED : ''}${context}`,
    );
    this.exit = exit;
    this.deterministic = deterministic;
  }
}

/** What a program that exited 0 before its hello is told. */
export const NEVER_SERVED =
  '; it exited cleanly before its hello line: did it call serve()? A program is served through the rank library (orch_rank.serve(...) in Python, orch_rank::serve(...) in C++, ranklib/PROTOCOL.md), which writes the hello after setup; a clean exit before hello is never transient, so it is not retried';

/**
 * A rank broke the protocol: a line that fails its schema, a line over the length limit, an answer
 * to another request. The same program would do it again, so it is never retried.
 */
export class RankProtocolError extends OrchError {
  constructor(where: { rank: number; card: string; pid: number | null }, fault: string) {
    super('RANK_PROTOCOL', describeFault(where, fault), {
      hint: 'the rank program and this worker disagree on the rank protocol (native/PROTOCOL.md)',
    });
  }
}

/**
 * The protocol fault of a rank that said no hello by its deadline: in a gang it may be waiting for
 * another rank (worker/command/rendezvous-joins.ts names the one that never joined).
 */
export class HelloDeadlineError extends RankProtocolError {}

function describeFault(where: { rank: number; card: string; pid: number | null }, fault: string): string {
  return `rank ${where.rank} on card ${where.card} (pid ${where.pid ?? '?'}) broke the protocol: ${fault}`;
}

/**
 * `rank 1 on card cpu:1@a (pid 42) exited with code 3, signal none; last error: INTERNAL: boom`.
 * A SIGTERM never comes from the worker (it closes stdin or kills with SIGKILL) and ranks start
 * ignoring it (rank-process.ts): one that killed a rank anyway came from outside, under Slurm
 * from the job step's end (`env`: the worker's environment, SLURM_JOB_ID), and says so.
 */
export function describeRankExit(e: RankExit, env: NodeJS.ProcessEnv = process.env): string {
  // the worker killed it for the fault: the kill signal would only hide why
  if (e.fault !== null) return describeFault(e, e.fault);
  const job = env.SLURM_JOB_ID ?? '';
  const how =
    e.signal === 'SIGTERM' && job !== ''
      ? `was killed by SIGTERM from Slurm (job ${job}'s step was signalled: scancel, preemption or its time limit; the program reset the SIGTERM the worker had it ignore) — the attempt was cut by Slurm, not by the rank`
      : e.signal !== null
        ? `was killed by ${e.signal}`
        : `exited with code ${e.code ?? 'unknown'}, signal none`;
  const last = e.lastError === null ? 'no error line' : `last error: ${escapeRankText(e.lastError)}`;
  return `rank ${e.rank} on card ${e.card} (pid ${e.pid ?? '?'}) ${how}; ${last}`;
}

/** The op's request id: unique inside the block attempt, echoed by graphrt on every line. */
export function opId(job: Pick<BlockJob, 'block' | 'attempt'>, kind: RankOp['op'], position: number): string {
  return `b${job.block}-a${job.attempt}-${kind}${position}`;
}

/** Helper for runners: the arm of a job by name. */
export function armOf(job: BlockJob, name: string): BlockArm {
  const arm = job.arms.find((a) => a.name === name);
  if (!arm)
    throw new OrchError(
      'BLOCK_PAYLOAD_INVALID',
      `block ${job.block}: arm "${name}" is not in the block job (its arms: ${job.arms.map((a) => a.name).join(', ')})`,
    );
  return arm;
}
