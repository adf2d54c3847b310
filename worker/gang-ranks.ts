/**
 * The ranks of one block attempt on this host: one per card, started through the RankRunner seam
 * (worker/rank-runner.ts), with a fresh rendezvous directory when the gang has several ranks, the
 * hellos awaited together; then every op sent to every rank alike, and at the end every rank
 * closed (or killed) and the rendezvous directory removed. A rank that exits while the gang is not
 * closing fails the gang (worker/gang-fate.ts), and so does a rank that answers an op with an
 * error: the others may wait for it inside a collective, so none is left running (`all`). A
 * CAPTURE_FAILED is the gang's finding (the arm goes unmeasured) only where every rank answered
 * it; ranks that disagree fail the gang too (`gangAnswers`).
 *
 * A command workload's ranks get a CommandGang (worker/command/command-gang.ts): MASTER_ADDR and
 * a MASTER_PORT picked for this attempt by rank 0's worker (worker/free-port.ts; across hosts
 * published through worker/spread-part.ts), and the exchange (worker/gang-exchange.ts). While it
 * starts, who reaches MASTER_PORT is watched (worker/command/rendezvous-joins.ts: a hello deadline
 * names the ranks that never joined), and on one host a MASTER_PORT taken under rank 0 starts the
 * gang once more on another (worker/command/stolen-port.ts).
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gangWorld } from '../jobs/block-job.ts';
import { CaptureBlockedError, otherBlockers } from '../jobs/capture-blocker.ts';
import type { Card } from '../jobs/card.ts';
import { OrchError } from '../jobs/errors.ts';
import type { Probe } from '../jobs/graphrt-protocol.ts';
import { indexAt } from '../jobs/index-at.ts';
import type { RankRendezvous } from '../jobs/native-args.ts';
import type { RankHelloLine } from '../jobs/rank-line.ts';
import { type RankOrigin, rankOrigin } from '../jobs/rank-origin.ts';
import { printedAnything, type RankOutputTail } from '../jobs/rank-output-tail.ts';
import { type RankStartup, rankStartup } from '../jobs/rank-startup.ts';
import { escapeRankText } from '../jobs/rank-text.ts';
import { rendezvousSecret } from '../jobs/spread-gang.ts';
import type { GangStaging } from '../store/gang-staging.ts';
import type { CommandGang } from './command/command-gang.ts';
import { RendezvousJoins } from './command/rendezvous-joins.ts';
import { DEFAULT_HELLO_TIMEOUT_S } from './command/spawn-resident.ts';
import { PortTakenTwiceError, type StolenPort, stolenPortLine } from './command/stolen-port.ts';
import { gangPortRange, pickFreePort, releasePort } from './free-port.ts';
import type { GangContext } from './gang-context.ts';
import { GangExchange } from './gang-exchange.ts';
import type { GangFate } from './gang-fate.ts';
import {
  HelloDeadlineError,
  RankExitError,
  type RankHandle,
  type RankLine,
  type RankOp,
  type RankRunner,
} from './rank-runner.ts';
import type { SpreadPart } from './spread-part.ts';

/** After a rank of a gang answered CAPTURE_FAILED, how long every other rank has to answer the same (GangRanks.gangAnswers). */
export const CAPTURE_AGREE_MS = 10_000;

export interface GangRanksOptions {
  /** this worker's cards by id */
  cards: Map<string, Card>;
  /** each card's flock file, in the job's card order */
  lockPaths: string[];
  runner: RankRunner;
  /** longest wait for one answer of a rank */
  requestTimeoutMs: number;
  closeGraceMs: number;
  rendezvousKey?: Buffer | undefined;
  /** where a command gang's exchanges meet (store/gang-staging.ts); absent: its ranks' exchanges are refused */
  staging?: GangStaging | undefined;
}

export class GangRanks {
  private handles: RankHandle[] = [];
  /** every rank's hello, in card order (the device names of probe records) */
  private hellosNow: RankHelloLine[] = [];
  /** design probe: the `probe` lines of each rank (card index) for the request in flight */
  private probeLines: Probe[][] = [];
  /** world > 1: this attempt's rendezvous directory (PROTOCOL.md "Multi-rank"), removed at the end */
  private rendezvousDir: string | null = null;
  /** card index → the exchange key its rank waits for now */
  private readonly waitingFor = new Map<number, string>();
  /** the card indexes whose hello came, each with when it came (epoch ms, this worker's clock) */
  private readonly helloFrom = new Map<number, number>();
  /** a command gang's exchange for this attempt */
  private exchange: GangExchange | null = null;
  /** the MASTER_PORT this part picked for the attempt (rank 0's part of a command gang), released at `end` */
  private pickedPort: number | null = null;
  /** the card indexes whose rank failed first-hand (not killed for another's failure): their output is recorded */
  private readonly failedFirstHand = new Set<number>();
  /** a command gang's start: who of its ranks reached MASTER_PORT */
  private joins: RendezvousJoins | null = null;
  /** while a command gang's start may be tried again: a rank's exit fails the start, which decides (startCommand) */
  private startExit: ((err: Error) => void) | null = null;
  /** a rank of this attempt published or awaited an exchange: its start is not tried again */
  private exchanged = false;
  /** why the gang was started a second time, for the failure of that start */
  private restartedBecause: string | null = null;

  constructor(
    private readonly gang: GangContext,
    private readonly opts: GangRanksOptions,
    private readonly fate: GangFate,
    private readonly spread: SpreadPart | null,
  ) {}

  get hellos(): readonly RankHelloLine[] {
    return this.hellosNow;
  }

  /** How each rank started (jobs/rank-startup.ts), against the attempt's block-start `started`; after start(). */
  startups(started: number): RankStartup[] {
    return this.hellosNow.map((hello, i) =>
      rankStartup(
        hello,
        this.gang.rankOf(i),
        indexAt(this.gang.job.cards, i, 'card'),
        started,
        this.helloFrom.get(i) ?? started,
      ),
    );
  }

  /** Where each rank of this host ran, from its hellos (card order): committed with the block (jobs/commit-record.ts `ranks`). */
  origins(): RankOrigin[] {
    return this.handles.map((r, i) =>
      rankOrigin(
        { rank: this.gang.rankOf(i), host: this.gang.host, card: indexAt(this.gang.job.cards, i, 'card') },
        r.processHellos?.() ?? [this.hellosNow[i] as RankHelloLine],
      ),
    );
  }

  get size(): number {
    return this.handles.length;
  }

  /** Starts one rank per card and waits for every hello (the ranks' rendezvous is the barrier before the first op). */
  async start(): Promise<void> {
    const job = this.gang.job;
    const world = gangWorld(job);
    // A fresh directory per attempt (short: Unix socket paths hold 107 bytes)
    if (world > 1) this.rendezvousDir = mkdtempSync(join(tmpdir(), 'orch-rv-'));
    const secret = this.opts.rendezvousKey === undefined ? undefined : rendezvousSecret(this.opts.rendezvousKey, job);
    if (job.workload.runtime === 'command') return this.startCommand(world);
    if (this.spread !== null) {
      if (secret === undefined)
        throw new OrchError(
          'BLOCK_PAYLOAD_INVALID',
          `block ${job.block} spreads across hosts, whose rendezvous needs the cluster secret this worker was not given`,
        );
      this.handles = [];
      await this.spread.startRanks(
        this.rendezvousDir as string,
        secret,
        (i, rv) => (this.handles[i] = this.startRank(i, world, rv)),
      );
    } else {
      const rv = this.rendezvousDir === null ? undefined : { address: join(this.rendezvousDir, 'rv.sock'), secret };
      this.handles = job.cards.map((_, i) => this.startRank(i, world, rv));
    }
    await this.awaitHellos(false);
  }

  /**
   * A command gang's ranks, every rank of this part at once (torchrun's rendezvous, not graphrt's),
   * watched for who joins MASTER_PORT (worker/command/rendezvous-joins.ts). A gang on one host
   * whose rank 0 could not bind MASTER_PORT, taken by another process after this worker checked
   * it (worker/command/stolen-port.ts), is started once more on another port; taken again, the
   * attempt fails saying both.
   */
  private async startCommand(world: number): Promise<void> {
    // across hosts the port reached every part through the staging: a new one would have to as well
    const local = this.spread === null && world > 1;
    let first: StolenPort | null = null;
    for (;;) {
      const gang = await this.commandGang();
      this.handles = this.gang.job.cards.map((_, i) =>
        this.startRank(i, world, undefined, {
          ...gang,
          localRank: i,
          exchange: (key, data) => this.exchangeOf(i, key, data, gang.exchange),
        }),
      );
      const joins = world > 1 ? new RendezvousJoins(this.gang, gang.masterPort, () => this.handles) : null;
      this.joins = joins;
      joins?.watch();
      try {
        return await this.awaitHellos(local);
      } catch (err) {
        if (!local) throw err;
        // a rank's exit waited for this decision (awaitHellos): the gang fails here, or starts again
        const stolen = await this.stolenPort(err, gang.masterPort);
        if (stolen !== null && first === null) {
          first = stolen;
          this.restartedBecause = `rank 0 could not bind MASTER_PORT ${stolen.port}, taken by another process after this worker checked it (rank 0 said: ${stolen.line}); the gang was started again on another port`;
          this.gang.log.warn(stolen, 'rendezvous port taken after its check; the gang starts again on another port');
          this.gang.events.worker(this.gang.tags(''), 'gang-restart', {
            port: stolen.port,
            reason: this.restartedBecause,
          });
          continue;
        }
        const failed =
          stolen === null ? (err as Error) : new PortTakenTwiceError(first as StolenPort, stolen, this.gang.host);
        this.fate.fail(failed);
        throw failed;
      } finally {
        joins?.stop();
      }
    }
  }

  /**
   * Whether the start failed for rank 0's MASTER_PORT taken under it: rank 0 (of this part) exited
   * before its hello, and no exchange was published (a new start would publish other bytes under
   * the attempt's keys). The start's ranks are ended first (the probe must not see theirs), and
   * meanwhile are not the gang's: their exits fail nothing. A stolen port is released, the start's
   * record of hellos cleared for the next; otherwise the ranks are the gang's again.
   */
  private async stolenPort(err: unknown, port: number): Promise<StolenPort | null> {
    if (!(err instanceof RankExitError) || err.exit.rank !== 0 || err.exit.beforeHello !== true || this.exchanged)
      return null;
    const started = this.handles;
    this.handles = [];
    for (const r of started) r.kill();
    await this.fate.race(Promise.all(started.map((r) => r.exited)));
    const rank0 = started[this.gang.job.cards.findIndex((_, i) => this.gang.rankOf(i) === 0)];
    const line = await stolenPortLine(rank0?.output?.() ?? { stdout: [], stderr: [] }, port);
    if (line === null) {
      this.handles = started;
      return null;
    }
    releasePort(port);
    this.pickedPort = null;
    this.hellosNow = [];
    this.helloFrom.clear();
    this.waitingFor.clear();
    this.failedFirstHand.clear();
    return { port, line };
  }

  /**
   * Waits for every rank's hello. `diverted`: a rank's exit fails this wait (the caller decides
   * whether the start is tried again), not the gang. A failure says who the gang waited for.
   */
  private async awaitHellos(diverted: boolean): Promise<void> {
    const handles = this.handles;
    handles.forEach(
      (r, i) =>
        void r.ready.then(
          () => this.handles === handles && this.helloFrom.set(i, Date.now()),
          () => this.handles === handles && this.failedHere(i),
        ),
    );
    const exited = new Promise<never>((_, reject) => {
      if (diverted) this.startExit = reject;
    });
    exited.catch(() => {});
    try {
      this.hellosNow = await this.fate.race(Promise.race([Promise.all(handles.map((r) => r.ready)), exited]));
    } catch (err) {
      throw this.startFailure(err);
    } finally {
      this.startExit = null;
    }
  }

  /**
   * Why the start failed, said of the gang: a hello deadline that passed while ranks waited in the
   * rendezvous for others that never joined names those (and keeps their output, not the waiting
   * ones'); otherwise the first rank to miss its deadline is not necessarily the one the gang
   * waits for, so the error says who had come. A gang started again says why.
   */
  private startFailure(err: unknown): unknown {
    if (!(err instanceof Error) || this.fate.failure !== null) return err;
    const pending = this.handles.map((_, i) => i).filter((i) => !this.helloFrom.has(i));
    // a rank waiting for an exchange waits for rank 0 through the worker, not in the rendezvous (startingContext says so)
    const never =
      err instanceof HelloDeadlineError && this.waitingFor.size === 0
        ? (this.joins?.neverJoined(pending, this.helloDeadlineMs(), err) ?? null)
        : null;
    const failed = never ?? err;
    if (never !== null) {
      this.failedFirstHand.clear();
      for (const m of never.missing) this.failedFirstHand.add(m.cardIndex);
    } else if (!err.message.includes('; the gang was starting:')) err.message += this.startingContext();
    if (this.restartedBecause !== null) failed.message += `; before that, ${this.restartedBecause}`;
    return failed;
  }

  /** The attempt's MASTER_ADDR/MASTER_PORT and exchange, the same for every rank of this part. */
  private async commandGang(): Promise<
    Omit<CommandGang, 'localRank' | 'exchange'> & {
      exchange: (rank: number, key: string, data: Buffer | null) => Promise<Buffer>;
    }
  > {
    const { job, log } = this.gang;
    const pick = async () => {
      this.pickedPort = await pickFreePort({
        range: gangPortRange(),
        onTaken: (port) => log.info({ port }, 'rendezvous port taken; trying another'),
      });
      return this.pickedPort;
    };
    const master =
      this.spread === null
        ? { addr: '127.0.0.1', port: await this.fate.race(pick()) }
        : await this.spread.masterAddress(pick);
    const deadlineMs = this.helloDeadlineMs();
    const staging = this.opts.staging;
    const ex =
      staging === undefined
        ? null
        : new GangExchange(
            staging,
            { experiment: job.experiment, block: job.block, attempt: job.attempt },
            { deadlineMs, race: (p) => this.fate.race(p) },
          );
    this.exchange = ex;
    return {
      masterAddr: master.addr,
      masterPort: master.port,
      localWorld: job.cards.length,
      groupRank: Math.floor((job.first_rank ?? 0) / job.cards.length),
      runId: `${job.experiment}.b${job.block}.a${job.attempt}`,
      localDevices: job.cards
        .map((id) => this.opts.cards.get(id))
        .flatMap((card) => (card?.backend === 'cuda' ? [card.uuid] : [])),
      exchange: (rank, key, data) =>
        ex === null
          ? Promise.reject(new Error('this worker has no gang staging to exchange through'))
          : ex.exchange(rank, key, data),
    };
  }

  /** A command rank's hello deadline (run.hello_timeout_s), the exchange's too. */
  private helloDeadlineMs(): number {
    const w = this.gang.job.workload;
    return (
      (w.runtime === 'command' ? (w.run.hello_timeout_s ?? DEFAULT_HELLO_TIMEOUT_S) : DEFAULT_HELLO_TIMEOUT_S) * 1000
    );
  }

  /** Rank i's exchange, remembered while it waits (startingContext names what it waits for). */
  private async exchangeOf(
    i: number,
    key: string,
    data: Buffer | null,
    exchange: (rank: number, key: string, data: Buffer | null) => Promise<Buffer>,
  ): Promise<Buffer> {
    this.waitingFor.set(i, key);
    this.exchanged = true;
    try {
      return await exchange(this.gang.rankOf(i), key, data);
    } finally {
      if (this.waitingFor.get(i) === key) this.waitingFor.delete(i);
    }
  }

  private startRank(
    i: number,
    world: number,
    rendezvous: RankRendezvous | undefined,
    commandGang?: CommandGang,
  ): RankHandle {
    const { job, events } = this.gang;
    const id = indexAt(job.cards, i, 'card');
    const tags = this.gang.tags(i);
    const rank = this.gang.rankOf(i);
    const handle = this.opts.runner.start({
      job,
      rank,
      world,
      card: this.opts.cards.get(id) as Card,
      lockPath: indexAt(this.opts.lockPaths, i, 'card lock path'),
      rendezvous,
      ...(commandGang === undefined ? {} : { commandGang }),
      log: this.gang.log.child({ card: id, rank }),
      onLine: (line: RankLine, raw: string) => {
        if (line.type === 'probe') this.probeLines[i]?.push(line);
        events.rankLine(tags, line, raw);
      },
      // a build serves the whole gang: on the host's worker track, not the rank's
      onBuild: ({ event, ...fields }) => events.worker(this.gang.tags(''), event, fields as never),
    });
    void handle.exited.then((exit) => {
      events.worker(tags, 'rank-exit', { code: exit.code, signal: exit.signal, pid: exit.pid });
      // a rank of a start given up (worker/command/stolen-port.ts) is no longer the gang's
      if (this.fate.closing || !this.handles.includes(handle)) return;
      this.failedHere(i);
      const err = new RankExitError(exit, this.startingContext());
      if (this.startExit !== null) this.startExit(err);
      else this.fate.fail(err);
    });
    return handle;
  }

  /** Rank i failed while the gang had not: its own failure, not a kill for another rank's. */
  private failedHere(i: number): void {
    if (this.fate.failure === null) this.failedFirstHand.add(i);
  }

  /** The last lines each rank that failed first-hand printed, for the record of the attempt's failure. */
  failedOutputs(): RankOutputTail[] {
    const { job, host } = this.gang;
    return [...this.failedFirstHand]
      .sort((a, b) => a - b)
      .flatMap((i) => {
        const output = this.handles[i]?.output?.();
        if (output === undefined || !printedAnything(output)) return [];
        const tail: RankOutputTail = {
          block: job.block,
          attempt: job.attempt,
          rank: this.gang.rankOf(i),
          card: job.cards[i] ?? '?',
          host,
          ...output,
        };
        return [tail];
      });
  }

  /**
   * While the gang starts, which ranks said hello and which did not: a rank that never joins the
   * rendezvous keeps the others from their hello, and the first to reach its deadline is not
   * necessarily the one missing.
   */
  private startingContext(): string {
    if (this.hellosNow.length > 0 || this.handles.length < 2) return '';
    const ranks = (said: boolean) =>
      this.handles
        .map((_, i) => i)
        .filter((i) => this.helloFrom.has(i) === said)
        .map((i) => this.gang.rankOf(i));
    const yes = ranks(true);
    const waits = [...this.waitingFor]
      .map(
        ([i, key]) => `; rank ${this.gang.rankOf(i)} was waiting for exchange "${key}", which rank 0 never published`,
      )
      .join('');
    return `; the gang was starting: ${yes.length === 0 ? 'no rank' : `rank ${yes.join(', ')}`} had said hello, rank ${ranks(false).join(', ')} had not${waits}`;
  }

  /** The OS pids of the ranks' processes (not foreign on their cards). */
  pids(): number[] {
    return this.handles.flatMap((r) => r.pids());
  }

  /** Whether `next` may be sent to every rank while `current` is answered (RankHandle.queues). */
  queues(current: RankOp, next: RankOp): boolean {
    return this.handles.length > 0 && this.handles.every((r) => r.queues?.(current, next) === true);
  }

  /** Sends one op to every rank; each must answer with a final line of `type`. */
  async all<T extends 'rep' | 'gate' | 'probe' | 'trace'>(
    op: RankOp,
    type: T,
  ): Promise<Extract<RankLine, { type: T }>[]> {
    return (await this.answers(op, type)).map((a) => a.line);
  }

  /** As `all`, each line with when this worker read it (epoch ms): a committed rep places the rank's span by it (jobs/gang-rep.ts). */
  async answers<T extends 'rep' | 'gate' | 'probe' | 'trace'>(
    op: RankOp,
    type: T,
  ): Promise<{ line: Extract<RankLine, { type: T }>; answeredMs: number }[]> {
    const answered = this.handles.map(() => 0);
    const checked = (line: RankLine, i: number): Extract<RankLine, { type: T }> => {
      // a graph arm whose capture fails in the user's program: a finding, the block goes on without
      // the arm where every rank's capture failed (gangAnswers); a trace probe's `trace` request
      // captures as a rep does (worker/rep-measure.ts)
      if (
        (op.op === 'rep' || op.op === 'identity' || op.op === 'trace') &&
        line.type === 'error' &&
        line.code === 'CAPTURE_FAILED'
      ) {
        const frame = 'frame' in line && line.frame !== undefined ? line.frame : null;
        const others = 'other_blockers' in line ? otherBlockers(line.other_blockers) : [];
        throw new CaptureBlockedError(
          { arm: op.arm.name, message: escapeRankText(line.message), frame, others },
          this.gang.rankOf(i),
          this.gang.job.cards[i] ?? '?',
        );
      }
      if (line.type !== type) {
        const what =
          line.type === 'error' ? `error ${line.code}: ${escapeRankText(line.message)}` : `a "${line.type}" line`;
        throw new OrchError(
          'RANK_ANSWERED_ERROR',
          `rank ${this.gang.rankOf(i)} on card ${this.gang.job.cards[i]} answered ${op.op} ${op.id} (arm ${op.arm.name}) with ${what}`,
        );
      }
      return line as Extract<RankLine, { type: T }>;
    };
    const ask = (r: RankHandle, i: number) =>
      r.request(op, this.opts.requestTimeoutMs).then((line) => {
        answered[i] = Date.now();
        return checked(line, i);
      });
    const world = gangWorld(this.gang.job);
    const lines =
      world > 1
        ? await this.gangAnswers(op, this.handles.map(ask))
        : await this.fate.race(
            Promise.all(
              this.handles.map((r, i) =>
                ask(r, i).catch((err: unknown) => {
                  if (!(err instanceof CaptureBlockedError)) this.failedHere(i);
                  throw err;
                }),
              ),
            ),
          );
    if (type === 'rep') this.sameSteps(op, lines as Extract<RankLine, { type: 'rep' }>[]);
    return lines.map((line, i) => ({ line, answeredMs: answered[i]! }));
  }

  /**
   * A gang's answers to `op` (world > 1), each rank's awaited. The first rank that answers
   * otherwise (an error, or its request failing) fails the gang at once: the others may be waiting
   * for it inside a collective and would answer only at the request timeout. A capture blocker
   * (CaptureBlockedError) is the gang's finding, and the block goes on without the arm, only when
   * every rank of the gang answered CAPTURE_FAILED: a rank whose capture succeeded replays the
   * step's collectives, which wait for the ranks whose capture failed, or meet their next request
   * (the arms' values mix, and the requests pile up). So after a rank's CAPTURE_FAILED every other
   * rank has CAPTURE_AGREE_MS to answer the same; a rank that answers otherwise, or not in that
   * time, fails the gang naming what each rank said. A gang across hosts agrees through the
   * staging (SpreadPart.captureFailedEverywhere): every rank of every part.
   */
  private async gangAnswers<L>(op: RankOp, asked: Promise<L>[]): Promise<L[]> {
    const got: (PromiseSettledResult<L> | undefined)[] = asked.map(() => undefined);
    let graceOver = false;
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    const captureOf = (g: PromiseSettledResult<L> | undefined) =>
      g?.status === 'rejected' && g.reason instanceof CaptureBlockedError ? g.reason : null;
    const decided = new Promise<L[] | CaptureBlockedError>((resolve, reject) => {
      const end = (err: Error) => {
        done = true;
        reject(err);
      };
      const decide = () => {
        if (done) return;
        const blocked = got.map(captureOf);
        const first = blocked.find((b) => b !== null);
        if (first === undefined) {
          const i = got.findIndex((g) => g?.status === 'rejected');
          if (i >= 0) {
            this.failedHere(i);
            const err = (got[i] as PromiseRejectedResult).reason as Error;
            this.fate.fail(err);
            return end(err);
          }
          if (got.every((g) => g?.status === 'fulfilled')) {
            done = true;
            resolve(got.map((g) => (g as PromiseFulfilledResult<L>).value));
          }
          return;
        }
        const waiting = got.some((g) => g === undefined);
        if (got.some((g, i) => g !== undefined && blocked[i] === null) || (waiting && graceOver)) {
          const err = this.captureDisagrees(op, got);
          this.failedHereAll(got);
          this.fate.fail(err);
          return end(err);
        }
        if (!waiting) {
          done = true;
          return resolve(first);
        }
        timer ??= setTimeout(() => {
          graceOver = true;
          decide();
        }, CAPTURE_AGREE_MS);
      };
      for (const [i, p] of asked.entries())
        void p.then(
          (value) => {
            got[i] = { status: 'fulfilled', value };
            decide();
          },
          (reason: unknown) => {
            got[i] = { status: 'rejected', reason };
            decide();
          },
        );
    });
    decided.catch(() => {});
    let out: L[] | CaptureBlockedError;
    try {
      out = await this.fate.race(decided);
    } finally {
      clearTimeout(timer);
    }
    if (!(out instanceof CaptureBlockedError)) return out;
    if (this.spread !== null) {
      const ranks = this.handles.map((_, i) => this.gang.rankOf(i));
      const missing = await this.spread.captureFailedEverywhere(op.id, ranks, CAPTURE_AGREE_MS);
      if (missing.length > 0) {
        const err = this.captureDisagrees(
          op,
          got,
          `rank ${missing.join(', ')} on the gang's other hosts did not answer CAPTURE_FAILED within ${CAPTURE_AGREE_MS / 1000} s (a rank whose capture succeeded waits in its replay's collectives for the ranks whose capture failed)`,
        );
        this.failedHereAll(got);
        this.fate.fail(err);
        throw err;
      }
    }
    throw out;
  }

  /** The ranks whose request failed (their capture, or otherwise): their last lines are recorded with the failure. */
  private failedHereAll(got: (PromiseSettledResult<unknown> | undefined)[]): void {
    for (const [i, g] of got.entries()) if (g?.status === 'rejected') this.failedHere(i);
  }

  /** The ranks disagree on `op`'s capture: what each of this host's said (`others`: the other hosts' part of it). */
  private captureDisagrees<L>(op: RankOp, got: (PromiseSettledResult<L> | undefined)[], others?: string): OrchError {
    const said = got.map((g, i) => {
      const who = `rank ${this.gang.rankOf(i)} on card ${this.gang.job.cards[i] ?? '?'}`;
      if (g === undefined)
        return `${who} had not answered within ${CAPTURE_AGREE_MS / 1000} s of the first CAPTURE_FAILED (a rank whose capture succeeded waits in its replay's collectives for the ranks whose capture failed)`;
      if (g.status === 'fulfilled') return `${who} answered ${op.op} (its capture did not fail)`;
      if (g.reason instanceof CaptureBlockedError) {
        const b = g.reason.blocker;
        const at = b.frame === null ? '' : ` (at ${escapeRankText(b.frame.file, 1024)}:${b.frame.line})`;
        return `${who} answered CAPTURE_FAILED: ${b.message}${at}`;
      }
      return `${who} failed: ${(g.reason as Error).message}`;
    });
    return new OrchError(
      'CAPTURE_FAILED',
      `the ranks disagree on the capture of arm ${op.arm.name} (${op.op} ${op.id}): ${[...said, ...(others === undefined ? [] : [others])].join('; ')}; an arm goes unmeasured for a capture blocker only when every rank's capture fails`,
      {
        hint: "make the captured step capturable on every rank (a host sync such as .item() on one rank only blocks that rank's capture), see the rank's line named",
      },
    );
  }

  /** Every rank measured the same number of steps: a gang's step is the slowest rank's, step by step. */
  private sameSteps(op: RankOp, lines: Extract<RankLine, { type: 'rep' }>[]): void {
    const counts = lines.map((l) => l.step_ms.length);
    if (counts.every((n) => n === counts[0])) return;
    const err = new OrchError(
      'RANK_ANSWERED_ERROR',
      `the ranks disagree on the step count of ${op.op} ${op.id} (arm ${op.arm.name}): ${counts.map((n, i) => `rank ${this.gang.rankOf(i)} ${n}`).join(', ')}; a gang's step is every rank's same step`,
    );
    this.fate.fail(err);
    throw err;
  }

  /** Design probe: sends `op` to every rank, gathering each rank's `probe` lines of it. */
  async probe(op: RankOp): Promise<Probe[][]> {
    this.probeLines = this.gang.job.cards.map(() => []);
    await this.all(op, 'probe');
    return this.probeLines;
  }

  kill(): void {
    for (const r of this.handles) r.kill();
  }

  /** Every rank gone: killed (`kill`), else closed gracefully; the rendezvous directory removed. */
  async end(kill: boolean): Promise<void> {
    await Promise.all(
      this.handles.map((r) => {
        if (!kill) return r.close(this.opts.closeGraceMs);
        r.kill();
        return r.exited;
      }),
    );
    if (this.rendezvousDir !== null) rmSync(this.rendezvousDir, { recursive: true, force: true });
    if (this.pickedPort !== null) releasePort(this.pickedPort);
  }
}
