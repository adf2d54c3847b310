/**
 * The ranks of one block attempt on this host: one per card, started through the RankRunner seam
 * (worker/rank-runner.ts), with a fresh rendezvous directory when the gang has several ranks, the
 * hellos awaited together; then every op sent to every rank alike, and at the end every rank
 * closed (or killed) and the rendezvous directory removed. A rank that exits while the gang is not
 * closing fails the gang (worker/gang-fate.ts).
 */
import { escapeRankText } from '../jobs/rank-text.ts';
import { CaptureBlockedError } from '../jobs/capture-blocker.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Card } from '../jobs/card.ts';
import { OrchError } from '../jobs/errors.ts';
import type { Probe } from '../jobs/graphrt-protocol.ts';
import type { RankRendezvous } from '../jobs/native-args.ts';
import type { RankHelloLine } from '../jobs/rank-line.ts';
import { rendezvousSecret } from '../jobs/spread-gang.ts';
import type { GangContext } from './gang-context.ts';
import type { GangFate } from './gang-fate.ts';
import { RankExitError, type RankHandle, type RankLine, type RankOp, type RankRunner } from './rank-runner.ts';
import type { SpreadPart } from './spread-part.ts';

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
}

export class GangRanks {
  private handles: RankHandle[] = [];
  /** every rank's hello, in card order (the device names of probe records) */
  private hellosNow: RankHelloLine[] = [];
  /** design probe: the `probe` lines of each rank (card index) for the request in flight */
  private probeLines: Probe[][] = [];
  /** world > 1: this attempt's rendezvous directory (PROTOCOL.md "Multi-rank"), removed at the end */
  private rendezvousDir: string | null = null;

  constructor(
    private readonly gang: GangContext,
    private readonly opts: GangRanksOptions,
    private readonly fate: GangFate,
    private readonly spread: SpreadPart | null,
  ) {}

  get hellos(): readonly RankHelloLine[] {
    return this.hellosNow;
  }

  get size(): number {
    return this.handles.length;
  }

  /** Starts one rank per card and waits for every hello (the ranks' rendezvous is the barrier before the first op). */
  async start(): Promise<void> {
    const job = this.gang.job;
    const world = job.world ?? job.cards.length;
    // A fresh directory per attempt (short: Unix socket paths hold 107 bytes)
    if (world > 1) this.rendezvousDir = mkdtempSync(join(tmpdir(), 'orch-rv-'));
    const secret = this.opts.rendezvousKey === undefined ? undefined : rendezvousSecret(this.opts.rendezvousKey, job);
    if (this.spread !== null) {
      if (secret === undefined) throw new OrchError('BLOCK_PAYLOAD_INVALID', `block ${job.block} spreads across hosts, whose rendezvous needs the cluster secret this worker was not given`);
      this.handles = [];
      await this.spread.startRanks(this.rendezvousDir as string, secret, (i, rv) => (this.handles[i] = this.startRank(i, world, rv)));
    } else {
      const rv = this.rendezvousDir === null ? undefined : { address: join(this.rendezvousDir, 'rv.sock'), secret };
      this.handles = job.cards.map((_, i) => this.startRank(i, world, rv));
    }
    this.hellosNow = await this.fate.race(Promise.all(this.handles.map((r) => r.ready)));
  }

  private startRank(i: number, world: number, rendezvous: RankRendezvous | undefined): RankHandle {
    const { job, events } = this.gang;
    const id = job.cards[i] as string;
    const tags = this.gang.tags(i);
    const rank = this.gang.rankOf(i);
    const handle = this.opts.runner.start({
      job, rank, world, card: this.opts.cards.get(id) as Card, lockPath: this.opts.lockPaths[i] as string, rendezvous,
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
      if (!this.fate.closing) this.fate.fail(new RankExitError(exit));
    });
    return handle;
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
  async all<T extends 'rep' | 'gate' | 'probe' | 'trace'>(op: RankOp, type: T): Promise<Extract<RankLine, { type: T }>[]> {
    return (await this.answers(op, type)).map((a) => a.line);
  }

  /** As `all`, each line with when this worker read it (epoch ms): a committed rep places the rank's span by it (jobs/gang-rep.ts). */
  async answers<T extends 'rep' | 'gate' | 'probe' | 'trace'>(op: RankOp, type: T): Promise<{ line: Extract<RankLine, { type: T }>; answeredMs: number }[]> {
    const answered = this.handles.map(() => 0);
    const lines = await this.fate.race(Promise.all(this.handles.map((r, i) => r.request(op, this.opts.requestTimeoutMs).then((l) => ((answered[i] = Date.now()), l)))));
    return lines.map((line, i) => {
      // a graph arm whose capture fails in the user's program: a finding, the block goes on without
      // the arm; a trace probe's `trace` request captures as a rep does (worker/rep-measure.ts)
      if ((op.op === 'rep' || op.op === 'identity' || op.op === 'trace') && line.type === 'error' && line.code === 'CAPTURE_FAILED') {
        const frame = 'frame' in line && line.frame !== undefined ? line.frame : null;
        throw new CaptureBlockedError({ arm: op.arm.name, message: escapeRankText(line.message), frame }, this.gang.rankOf(i), this.gang.job.cards[i] ?? '?');
      }
      if (line.type !== type) {
        const what = line.type === 'error' ? `error ${line.code}: ${escapeRankText(line.message)}` : `a "${line.type}" line`;
        throw new OrchError('RANK_ANSWERED_ERROR', `rank ${this.gang.rankOf(i)} on card ${this.gang.job.cards[i]} answered ${op.op} ${op.id} (arm ${op.arm.name}) with ${what}`);
      }
      return { line: line as Extract<RankLine, { type: T }>, answeredMs: answered[i]! };
    });
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
    await Promise.all(this.handles.map((r) => (kill ? (r.kill(), r.exited) : r.close(this.opts.closeGraceMs))));
    if (this.rendezvousDir !== null) rmSync(this.rendezvousDir, { recursive: true, force: true });
  }
}
