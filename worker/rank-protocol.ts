/**
 * RankProtocol: the worker's side of the rank JSON-lines protocol (ranklib/PROTOCOL.md, and
 * graphrt's dialect native/PROTOCOL.md) with one resident, line-oriented rank process. It knows
 * nothing of what the process is (graphrt serve, a user's program through a rank library): the
 * runner spawns the child and hands over a RankLineSchema, which parses a stdout line and writes
 * a request line.
 *
 * States, each with what it does with a stdout line:
 * - `preparing` (a rank started in the host phase, `hostPhase`; ranklib/PROTOCOL.md "Host
 *   phase"): its `prepared` line resolves `prepared` and it stays here, waiting, until `open()`
 *   writes the devices; an `error` line is reported (PREPARE_TOUCHED_CUDA: the exit follows);
 *   anything else is a fault. The hello clock starts at `open()`, not at the spawn;
 * - `awaiting-hello`: a `hello` resolves `ready` (serving); an `error` line is reported and kept
 *   as the last error (the exit that follows rejects `ready`); any other line is a fault, and so
 *   is no hello within `helloTimeoutMs` (a program that does not speak the protocol at all);
 * - `serving`: a line answers the request in flight (`pending[0]`) only when its id and arm are
 *   that request's; a final line of another request, a repeated one, a second hello, a line with
 *   nothing in flight is a fault, never an answer;
 * - `faulted`: the rank broke the protocol; it is killed, every pending request and `ready`
 *   failed with RankProtocolError, later lines ignored, the exit record carries the fault;
 * - `exited`: the process is gone; every pending request (and `ready`) failed with
 *   RankExitError (RANK_EXITED or RANK_DIED by its exit, RANK_PROTOCOL after a fault).
 *
 * The pipeline is one deep: at most one request written behind the one answered now (the rank
 * reads a line only after the final line of the one before), so the next starts the moment the
 * answer before it is written. A request's clock runs from when it becomes `pending[0]`; one not
 * answered in time fails with RankTimeoutError (RANK_TIMEOUT), and the one written behind it
 * with it (it would be answered only after it).
 *
 * An `exchange` line (ranklib/PROTOCOL.md "Exchange") is neither a hello nor an answer: in any
 * state before the exit it goes to `onExchange`, which answers it on stdin later (`send`); one the
 * handler refuses (a 17th) is a fault.
 *
 * The child must lead its own process group (spawned `detached`): `kill()` SIGKILLs the group.
 */

import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Card } from '../jobs/card.ts';
import { OrchError } from '../jobs/errors.ts';
import { MAX_RANK_LINE_BYTES, MAX_RANK_LINE_LABEL, quoteLine } from '../jobs/line-limit.ts';
import { messageOf } from '../jobs/message-of.ts';
import { OutputTail, type RankOutput } from '../jobs/rank-output-tail.ts';
import { RANK_REQUESTS_IN_FLIGHT_MAX } from '../jobs/rank-protocol-constants.ts';
import { readLines } from './line-reader.ts';
import { HelloDeadlineError, type RankExit, RankExitError, type RankOp, RankProtocolError } from './rank-runner.ts';

/** What the protocol reads of every line; the schema's own types narrow the rest. */
export interface ProtocolLine {
  type: string;
  id?: string | undefined;
  final?: boolean | undefined;
}

/** The runner's dialect of the protocol: how a stdout line is parsed, how a request is written. */
export interface RankLineSchema<L extends ProtocolLine> {
  /** one stdout line, validated; throws an Error whose message says what is wrong with it */
  parse(raw: string): L;
  /** the stdin line (without its newline) that asks the rank for `op` */
  request(op: RankOp): string;
}

export type RankProtocolState = 'preparing' | 'awaiting-hello' | 'serving' | 'faulted' | 'exited';

export interface RankProtocolOptions<L extends ProtocolLine> {
  rank: number;
  card: Card;
  log: Logger;
  /** every line that passed the schema and belongs where it arrived (hello included); `raw` as printed */
  onLine: (line: L, raw: string) => void;
  /** names the program in the exit record when it cannot be started at all */
  program: string;
  /** after an error answer, how long to wait for the exit that makes it fatal (default 500 ms) */
  errorExitWaitMs?: number;
  /** how long the rank may take to say hello before it is a fault (default: no bound) */
  helloTimeoutMs?: number;
  /** what the fault of a missing hello says after "no hello within N ms" (which protocol, how to speak it; what the rank waits for) */
  helloHint?: string | (() => string);
  /** an `exchange` line, before hello or during a request; throwing breaks the protocol with its message */
  onExchange?: (line: L, raw: string) => void;
  /** every stderr line, as it arrives (for people: the event stream's output) */
  onStderr?: (line: string) => void;
  /** how many of the last stderr lines the exit record quotes when the rank printed no error line (default 1) */
  stderrLinesInExit?: number;
  /** false: a user's program, whose exit codes say nothing about a retry (RankExit.codesKnown) */
  exitCodesKnown?: false;
  /** called the moment the process exits, before its pipes are drained (the runner ends what is left of its group) */
  onExit?: () => void;
  /** started in the host phase: `prepared` first, hello only after `open()` (the `preparing` state) */
  hostPhase?: { open: (devices: string) => string };
}

/** A rank that did not answer a request in time, or a request behind it that it took along. */
export class RankTimeoutError extends OrchError {
  constructor(message: string) {
    super('RANK_TIMEOUT', message, {
      hint: "raise the worker's request timeout if a rep of this workload takes longer; else the rank hung (a stalled collective, a stuck card)",
    });
  }
}

interface Pending<L> {
  op: RankOp;
  timeoutMs: number;
  resolve: (l: L) => void;
  reject: (e: Error) => void;
  timer?: NodeJS.Timeout;
}

const STDERR_KEEP = 20;
/**
 * After the process exits, how long its pipes may stay open before they are closed from this
 * side: a child that escaped the group (setsid) and holds stdout must not keep the rank — nor
 * the block, nor a cancel — waiting for a close that never comes.
 */
export const STDIO_GRACE_MS = 1000;
const MAX_PENDING = RANK_REQUESTS_IN_FLIGHT_MAX;

type HelloOf<L> = Extract<L, { type: 'hello' }>;
/** The host phase's line: what prepare() took. */
export interface PreparedLine {
  type: 'prepared';
  prepare_ms: number;
  /** when the line arrived, the worker's performance.now(): how long an adopting rank waited for it */
  at_ms: number;
}

export class RankProtocol<L extends ProtocolLine> {
  readonly rank: number;
  /**
   * The card it runs on, as its failures name it: a process started in the host phase learns it at
   * `open`, since it may have waited in another card's slot (prepared-slots.ts take).
   */
  private cardNow: Card;
  readonly ready: Promise<HelloOf<L>>;
  readonly exited: Promise<RankExit>;
  /** the host phase's `prepared` line (never settles for a rank started without `hostPhase`) */
  readonly prepared: Promise<PreparedLine>;
  private stateNow: RankProtocolState;
  private resolvePrepared!: (l: PreparedLine) => void;
  private rejectPrepared!: (e: Error) => void;
  /** the request answered now, and at most one written behind it */
  private readonly pending: Pending<L>[] = [];
  /** requests answered with an error line, each waiting for the exit that would make it fatal */
  private readonly erroring = new Set<Pending<L>>();
  private fault: string | null = null;
  private exit: RankExit | null = null;
  private lastErrorLine: string | null = null;
  private readonly stderrTail: string[] = [];
  /** both streams' last lines, escaped and bounded, for the record of a failure (jobs/rank-output-tail.ts) */
  private readonly tail = new OutputTail();
  private readonly errorExitWaitMs: number;
  private resolveReady!: (l: HelloOf<L>) => void;
  private rejectReady!: (e: Error) => void;

  constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly schema: RankLineSchema<L>,
    private readonly opts: RankProtocolOptions<L>,
  ) {
    this.rank = opts.rank;
    this.cardNow = opts.card;
    this.errorExitWaitMs = opts.errorExitWaitMs ?? 500;
    this.ready = new Promise<HelloOf<L>>((res, rej) => {
      this.resolveReady = res;
      this.rejectReady = rej;
    });
    this.ready.catch(() => {});
    this.prepared = new Promise<PreparedLine>((res, rej) => {
      this.resolvePrepared = res;
      this.rejectPrepared = rej;
    });
    this.prepared.catch(() => {});
    this.stateNow = opts.hostPhase === undefined ? 'awaiting-hello' : 'preparing';
    if (opts.hostPhase === undefined) this.watchHello(opts.helloTimeoutMs);
    child.stdin.on('error', () => {
      // EPIPE after the rank died: its exit is reported through `exited`
    });
    readLines(child.stdout, MAX_RANK_LINE_BYTES, {
      onLine: (raw) => {
        this.tail.push('stdout', raw);
        this.onStdout(raw);
      },
      onTooLong: (head) =>
        this.breakProtocol(`a stdout line longer than ${MAX_RANK_LINE_LABEL}, starting: ${quoteLine(head)}`),
    });
    // stderr is for people: an overlong line is kept by its head, not a protocol fault
    readLines(child.stderr, MAX_RANK_LINE_BYTES, {
      onLine: (l) => this.keepStderr(l),
      onTooLong: (head) => this.keepStderr(`${head}… (longer than ${MAX_RANK_LINE_LABEL})`),
    });
    this.exited = new Promise<RankExit>((resolve) => {
      child.once('error', (e) => {
        this.lastErrorLine = `cannot start ${opts.program}: ${e.message}`;
        resolve(this.onExit(null, null));
      });
      child.once('close', (code, signal) => resolve(this.onExit(code, signal)));
    });
    child.once('exit', () => {
      opts.onExit?.();
      setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
      }, STDIO_GRACE_MS).unref();
    });
  }

  get state(): RankProtocolState {
    return this.stateNow;
  }

  pids(): number[] {
    return this.exit || this.child.pid === undefined ? [] : [this.child.pid];
  }

  output(): RankOutput {
    return this.tail.output();
  }

  /** One process serves every request in order: any request may queue behind another. */
  queues(): boolean {
    return true;
  }

  request(op: RankOp, timeoutMs: number): Promise<L> {
    return new Promise<L>((resolve, reject) => {
      if (this.exit) return reject(new RankExitError(this.exit));
      if (this.fault !== null) return reject(this.protocolError(this.fault));
      if (this.pending.length >= MAX_PENDING) {
        const [a, b] = this.pending as [Pending<L>, Pending<L>];
        return reject(
          new OrchError(
            'RANK_REQUEST_INVALID',
            `rank ${this.rank}: ${a.op.id} and ${b.op.id} already in flight (one request at most behind the one answered now); ${op.op} ${op.id} not sent`,
          ),
        );
      }
      const p: Pending<L> = { op, timeoutMs, resolve, reject };
      this.pending.push(p);
      if (this.pending.length === 1) this.startClock(p);
      this.child.stdin.write(`${this.schema.request(op)}\n`);
    });
  }

  /** Writes one line (an exchange's answer) to the rank's stdin, unless it is gone. */
  send(line: string): void {
    if (this.exit || this.fault !== null) return;
    this.child.stdin.write(`${line}\n`);
  }

  /**
   * The host phase's end: writes `open` with the devices of `card` (the caller holds its lock by
   * now); the rank runs setup() and says hello, within the hello timeout counted from here.
   */
  get card(): Card {
    return this.cardNow;
  }

  open(devices: string, card: Card): void {
    const hp = this.opts.hostPhase;
    if (hp === undefined || this.stateNow !== 'preparing')
      throw new OrchError(
        'RANK_REQUEST_INVALID',
        `rank ${this.rank}: open sent to a rank in state ${this.stateNow}, not one waiting in the host phase`,
      );
    this.stateNow = 'awaiting-hello';
    this.cardNow = card;
    this.watchHello(this.opts.helloTimeoutMs);
    this.child.stdin.write(`${hp.open(devices)}\n`);
  }

  kill(): void {
    if (this.exit || this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, 'SIGKILL');
    } catch {
      // the group is already gone
    }
  }

  /** Closes stdin (the rank ends when it has answered), SIGKILL after `graceMs`. */
  async close(graceMs: number): Promise<RankExit> {
    this.child.stdin.end();
    const t = setTimeout(() => this.kill(), graceMs);
    const e = await this.exited;
    clearTimeout(t);
    return e;
  }

  private onStdout(raw: string): void {
    if (this.stateNow === 'faulted' || this.stateNow === 'exited' || raw.trim() === '') return;
    let line: L;
    try {
      line = this.schema.parse(raw);
    } catch (err) {
      this.breakProtocol(messageOf(err));
      return;
    }
    if (line.type === 'exchange' && this.opts.onExchange !== undefined) {
      try {
        this.opts.onExchange(line, raw);
      } catch (err) {
        this.breakProtocol(messageOf(err));
      }
      return;
    }
    if (line.type === 'error') this.lastErrorLine = errorText(line);
    if (this.stateNow === 'preparing') this.whilePreparing(line, raw);
    else if (this.stateNow === 'awaiting-hello') this.beforeHello(line, raw);
    else this.answer(line, raw);
  }

  private whilePreparing(line: L, raw: string): void {
    const p = line as ProtocolLine & Partial<PreparedLine>;
    if (p.type === 'prepared' && typeof p.prepare_ms === 'number')
      this.resolvePrepared({ type: 'prepared', prepare_ms: p.prepare_ms, at_ms: performance.now() });
    else if (line.type === 'error') this.opts.onLine(line, raw);
    else this.breakProtocol(`a "${line.type}" line in the host phase (before open): ${quoteLine(raw)}`);
  }

  private beforeHello(line: L, raw: string): void {
    if (line.type === 'hello') {
      this.stateNow = 'serving';
      this.opts.onLine(line, raw);
      this.resolveReady(line as HelloOf<L>);
    } else if (line.type === 'error') {
      // a final error before hello (CARD_BUSY) is followed by the exit, which rejects `ready`
      this.opts.onLine(line, raw);
    } else this.breakProtocol(`a "${line.type}" line before hello: ${quoteLine(raw)}`);
  }

  private answer(line: L, raw: string): void {
    const p = this.pending[0] ?? null;
    const { type, id, final } = line as ProtocolLine;
    const arm = 'arm' in line ? String(line.arm) : undefined;
    // A line of another request (a repeated final line, a late answer) must never answer this one.
    const stray =
      type === 'hello' ||
      type === 'prepared' ||
      (id !== undefined && (p === null || id !== p.op.id)) ||
      (final === true && type !== 'error' && p === null);
    const wrongArm = p !== null && arm !== undefined && arm !== p.op.arm.name;
    if (stray || wrongArm) {
      const expected = p === null ? 'no request in flight' : `request ${p.op.id} (arm ${p.op.arm.name}) in flight`;
      const got = `id ${quoteLine(id ?? 'none')}${arm !== undefined ? `, arm ${quoteLine(arm)}` : ''}`;
      this.breakProtocol(`a "${type}" line of ${got} with ${expected}: ${quoteLine(raw)}`);
      return;
    }
    this.opts.onLine(line, raw);
    if (final !== true || p === null) return;
    clearTimeout(p.timer);
    this.pending.shift();
    this.startClock(this.pending[0]);
    if (type === 'error') {
      // A fatal error (CUDA_ERROR...) is followed by the exit, which rejects with the exit code
      // and this line; a bad request is answered and serving goes on.
      this.erroring.add(p);
      p.timer = setTimeout(() => {
        if (this.erroring.delete(p)) p.resolve(line);
      }, this.errorExitWaitMs);
      return;
    }
    p.resolve(line);
  }

  private startClock(p: Pending<L> | undefined): void {
    if (p === undefined) return;
    p.timer = setTimeout(() => {
      if (this.pending[0] !== p) return;
      this.pending.shift();
      const where = `rank ${this.rank} on card ${this.card.id}`;
      p.reject(
        new RankTimeoutError(
          `${where} did not answer ${p.op.op} ${p.op.id} (arm ${p.op.arm.name}) within ${p.timeoutMs} ms`,
        ),
      );
      // the one written behind it would be answered only after it: it fails with it
      for (const q of this.pending.splice(0))
        q.reject(
          new RankTimeoutError(
            `${where}: ${q.op.op} ${q.op.id} not answered: ${p.op.id}, written before it, timed out`,
          ),
        );
    }, p.timeoutMs);
  }

  /** The rank is ended at once: its exit reports the fault, the request in flight (or the wait for hello) fails with it now. */
  private breakProtocol(why: string, kind: typeof RankProtocolError = RankProtocolError): void {
    if (this.fault !== null || this.exit) return;
    this.fault = why;
    this.stateNow = 'faulted';
    const err = this.protocolError(why, kind);
    this.rejectPrepared(err);
    this.rejectReady(err);
    this.rejectAll(err);
    this.kill();
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): RankExit {
    if (this.exit) return this.exit;
    const beforeHello = this.stateNow === 'awaiting-hello' || this.stateNow === 'preparing';
    this.stateNow = 'exited';
    this.exit = {
      rank: this.rank,
      card: this.card.id,
      pid: this.child.pid ?? null,
      code,
      signal,
      lastError: this.lastErrorLine ?? stderrLastError(this.stderrTail, this.opts.stderrLinesInExit ?? 1),
      fault: this.fault,
      ...(this.opts.exitCodesKnown === false ? { codesKnown: false as const } : {}),
      ...(beforeHello ? { beforeHello: true as const } : {}),
    };
    const err = new RankExitError(this.exit);
    this.rejectPrepared(err);
    this.rejectReady(err);
    this.rejectAll(err);
    return this.exit;
  }

  private rejectAll(err: Error): void {
    for (const q of [...this.erroring, ...this.pending.splice(0)]) {
      clearTimeout(q.timer);
      q.reject(err);
    }
    this.erroring.clear();
  }

  private protocolError(fault: string, kind: typeof RankProtocolError = RankProtocolError): RankProtocolError {
    return new kind({ rank: this.rank, card: this.card.id, pid: this.child.pid ?? null }, fault);
  }

  private keepStderr(l: string): void {
    if (l.trim() === '') return;
    this.tail.push('stderr', l);
    this.stderrTail.push(l);
    if (this.stderrTail.length > STDERR_KEEP) this.stderrTail.shift();
    this.opts.log.debug({ stderr: l }, 'rank stderr');
    this.opts.onStderr?.(l);
  }

  private watchHello(ms: number | undefined): void {
    if (ms === undefined) return;
    const t = setTimeout(() => {
      const hint = typeof this.opts.helloHint === 'function' ? this.opts.helloHint() : this.opts.helloHint;
      if (this.stateNow !== 'awaiting-hello') return;
      this.breakProtocol(`no hello within ${ms} ms${hint === undefined ? '' : `: ${hint}`}`, HelloDeadlineError);
    }, ms);
    void this.ready.catch(() => undefined).finally(() => clearTimeout(t));
  }
}

/** `CODE: message` of an error line. */
function errorText(line: ProtocolLine): string {
  const e = line as { code?: unknown; message?: unknown };
  return `${String(e.code ?? 'ERROR')}: ${String(e.message ?? '')}`;
}

/** A JSON error line on stderr, as much of it as a message needs (PROTOCOL.md "Errors"). */
const StderrErrorSchema = z.object({
  type: z.literal('error'),
  code: z.string().optional(),
  message: z.string().optional(),
});

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The last `lines` stderr lines, preferring a JSON error line (PROTOCOL.md: the final error goes to stderr too). */
function stderrLastError(tail: string[], lines: number): string | null {
  for (let i = tail.length - 1; i >= 0; i--) {
    const l = tail[i] as string;
    const j = StderrErrorSchema.safeParse(parseJson(l));
    if (j.success) return `${j.data.code ?? 'ERROR'}: ${j.data.message ?? ''}`;
  }
  return tail.length > 0
    ? tail
        .slice(-lines)
        .map((l) => l.slice(0, 500))
        .join(' | ')
    : null;
}
