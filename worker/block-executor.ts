/**
 * Executes one attempt of one block on its leased gang (docs/ARCHITECTURE.md "One toggle, YAML
 * to CUDA"): validate the payload, confirm the lease, check the cards for foreign processes, start
 * one rank per card through the RankRunner seam (worker/rank-runner.ts), run the identity gates,
 * then the reps in the planned order, stream every line, and commit the block once, fenced by the
 * epoch (store/lua/commit-block.lua).
 *
 * Fate of the gang: the first failure wins and kills every rank at once — a rank that exits, a
 * renew that fails (lease expired, released or revoked), a revocation message, a foreign process
 * (foreign_process: fail), a request that times out. The leases are released on every path, so
 * the scheduler's next grant (or the gang's other hosts' next renew) sees the cards free.
 *
 * Every planned rep ends as one of: committed result; failed entry with this attempt's reason
 * (the block failed; a later attempt that commits deletes it); failed entry "not run" (graceful
 * stop: committed with the measured reps); failed entry "cancelled" (`orch cancel`: the cancel
 * notice aborts the rep in flight — a half rep is not measured — and the block commits what it
 * measured under its still-held epoch, before the scheduler revokes the gang).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { armsNeedingIdentity, BlockJobSchema, sequenceReps, type BlockArm, type BlockJob } from '../jobs/block-job.ts';
import { OrchError } from '../jobs/errors.ts';
import { GRAPHRT_TOGGLES } from '../jobs/graphrt-toggles.ts';
import type { Card } from '../jobs/card.ts';
import { toJobError } from '../store/job-error.ts';
import type { LeaseStore } from '../store/lease-store.ts';
import type { CommitGate, CommitRep, FailedRep, ResultStore } from '../store/result-store.ts';
import type { Probe } from '../jobs/graphrt-protocol.ts';
import type { ProbeRecord } from '../jobs/probe-record.ts';
import type { RankHelloLine } from '../jobs/rank-line.ts';
import type { EventStream, EventTags } from './event-stream.ts';
import { describeForeign, type ForeignProcessProbe } from './foreign-processes.ts';
import { LeaseKeeper } from './lease-keeper.ts';
import { isSpread, leaseOwnerOf, rendezvousSecret } from '../jobs/spread-gang.ts';
import type { RankRendezvous } from '../jobs/native-args.ts';
import type { GangStaging } from '../store/gang-staging.ts';
import { advertiseAddress } from './advertise-address.ts';
import { SpreadPart } from './spread-part.ts';
import type { RunningPart } from './lease-message-check.ts';
import { armOf, opId, RankExitError, type RankHandle, type RankLine, type RankOp, type RankRunner } from './rank-runner.ts';

export interface ExecutorOptions {
  host: string;
  /** this worker's cards by id */
  cards: Map<string, Card>;
  /** directory of the per-card flock files (the host guard) */
  lockDir: string;
  leaseTtlMs: number;
  renewEveryMs: number;
  /** longest wait for one answer of a rank (a hung rank fails the block) */
  requestTimeoutMs: number;
  /** foreign_process: wait — how often to look again */
  foreignPollMs: number;
  /** after stdin closes, how long a rank may take to exit before SIGKILL */
  closeGraceMs: number;
  /** the cluster secret, from which each attempt's rendezvous secret is made (jobs/spread-gang.ts) */
  rendezvousKey?: Buffer;
  /** this host's address for a spread gang's rank 0 (default: advertise-address.ts) */
  advertise?: string;
  /** a spread gang's longest wait for another host's part (rendezvous, staging, commit); default 60 s */
  gangWaitMs?: number;
}

export interface ExecutorDeps {
  leases: LeaseStore;
  results: ResultStore;
  runner: RankRunner;
  probe: ForeignProcessProbe;
  /** the experiment's event stream */
  events: (experiment: string) => EventStream;
  log: Logger;
  /** true once the worker is stopping (SIGTERM): finish the rep in flight, run no more */
  stopping: () => boolean;
  /** where a spread gang's parts meet (needed only for gangs across hosts) */
  staging?: GangStaging;
}

export interface BlockOutcome {
  experiment: string;
  block: number;
  attempt: number;
  epoch: number;
  measured: number;
  not_run: number;
  gates: { arm: string; pass: boolean }[];
}

/** The gang lost its lease (expired, released or revoked): never retried as the same attempt. */
export class LeaseLostError extends OrchError {
  constructor(message: string) {
    super('LEASE_LOST', message);
  }
}

interface PlannedRep {
  position: number;
  arm: string;
  rep: number;
}

/** The card's flock file: the card id with anything but [A-Za-z0-9_.@-] replaced by '_'. */
export function cardLockPath(lockDir: string, card: string): string {
  return join(lockDir, `${card.replace(/[^A-Za-z0-9_.@-]/g, '_')}.lock`);
}

export class BlockExecutor {
  /** running gangs by epoch: the revocation listener aborts them */
  private readonly active = new Map<number, GangRun>();

  constructor(
    private readonly opts: ExecutorOptions,
    private readonly deps: ExecutorDeps,
  ) {
    mkdirSync(opts.lockDir, { recursive: true });
  }

  /** Runs one host job's payload; throws the error whose message becomes BullMQ's failedReason. */
  async execute(data: unknown): Promise<BlockOutcome> {
    const parsed = BlockJobSchema.safeParse(data);
    if (!parsed.success) {
      throw toJobError(new OrchError('BLOCK_PAYLOAD_INVALID', `invalid block payload: ${formatIssues(parsed.error)}`));
    }
    const job = parsed.data;
    if (job.host !== this.opts.host) {
      throw toJobError(new OrchError('BLOCK_WRONG_HOST', `block job for host "${job.host}" reached the worker of host "${this.opts.host}"`));
    }
    const foreignCards = job.cards.filter((c) => !this.opts.cards.has(c));
    if (foreignCards.length > 0) {
      throw toJobError(new OrchError('BLOCK_FOREIGN_CARDS', `cards ${foreignCards.join(', ')} are not cards of host ${this.opts.host} (it has ${[...this.opts.cards.keys()].join(', ')})`));
    }
    const run = new GangRun(job, this.opts, this.deps);
    this.active.set(job.epoch, run);
    try {
      return await run.run();
    } finally {
      this.active.delete(job.epoch);
    }
  }

  /** The running gang parts a revoke-channel message for `cards` under `epochs` names. */
  matching(cards: string[], epochs: number[]): RunningPart[] {
    return [...this.active]
      .filter(([epoch, run]) => epochs.includes(epoch) && run.job.cards.some((c) => cards.includes(c)))
      .map(([epoch, run]) => ({ experiment: run.job.experiment, epoch, cards: run.job.cards }));
  }

  /** A revocation of `cards` under `epochs`: the matching gangs fail and their ranks die now. */
  revoked(cards: string[], epochs: number[], reason: string): void {
    for (const [epoch, run] of this.active) {
      if (epochs.includes(epoch) && run.job.cards.some((c) => cards.includes(c))) {
        run.fail(new LeaseLostError(`lease of block ${run.job.block} attempt ${run.job.attempt} (epoch ${epoch}) revoked: ${reason}`));
      }
    }
  }

  /** A cancel notice for `cards` under `epochs` (store/cancel-notice.ts): the matching gangs stop gracefully. */
  cancelled(cards: string[], epochs: number[], reason: string): void {
    for (const [epoch, run] of this.active) {
      if (epochs.includes(epoch) && run.job.cards.some((c) => cards.includes(c))) run.cancel(reason);
    }
  }

  /** Every running gang fails and its ranks die now: the worker's stop ran out of time (Redis gone). */
  abortAll(reason: string): void {
    for (const [epoch, run] of this.active) {
      run.fail(new LeaseLostError(`block ${run.job.block} attempt ${run.job.attempt} (epoch ${epoch}) aborted: ${reason}`));
    }
  }

  get running(): number {
    return this.active.size;
  }
}

class GangRun {
  private ranks: RankHandle[] = [];
  private failure: Error | null = null;
  private rejectFailed!: (e: Error) => void;
  private readonly failed: Promise<never>;
  private closing = false;
  private readonly log: Logger;
  private readonly events: EventStream;
  private readonly lockPaths: string[];
  /** world > 1: this attempt's rendezvous directory (PROTOCOL.md "Multi-rank"), removed at the end */
  private rendezvousDir: string | null = null;
  /** this host's part of a gang across hosts; null on one host */
  private readonly spread: SpreadPart | null;
  /** every rank's hello, in card order (the device names of probe records) */
  private hellos: RankHelloLine[] = [];
  /** design probe: the `probe` lines of each rank (card index) for the request in flight */
  private probeLines: Probe[][] = [];
  /** `orch cancel`: the notice's reason once it arrived; the rep loop commits what it measured */
  private cancelReason: string | null = null;
  private wakeCancelled: () => void = () => undefined;
  private readonly cancelledSignal = new Promise<null>((resolve) => (this.wakeCancelled = () => resolve(null)));
  /** the rep loop has begun: from here a cancel commits instead of failing the attempt */
  private measuring = false;
  /** the ranks were killed to abort a cancelled rep: they are not closed gracefully */
  private aborted = false;

  constructor(
    readonly job: BlockJob,
    private readonly opts: ExecutorOptions,
    private readonly deps: ExecutorDeps,
  ) {
    this.failed = new Promise<never>((_, reject) => (this.rejectFailed = reject));
    this.failed.catch(() => {});
    this.log = deps.log.child({ experiment: job.experiment, block: job.block, attempt: job.attempt, epoch: job.epoch });
    this.events = deps.events(job.experiment);
    this.lockPaths = job.cards.map((c) => cardLockPath(opts.lockDir, c));
    this.spread = null;
    if (isSpread(job)) {
      if (!deps.staging) throw new OrchError('BLOCK_PAYLOAD_INVALID', `block ${job.block} spreads across hosts, which this worker was not set up for (no staging store)`);
      const waitMs = opts.gangWaitMs ?? 60_000;
      this.spread = new SpreadPart(job, { host: opts.host, advertise: opts.advertise ?? advertiseAddress(), waitMs, pollMs: 50 }, deps.staging, deps.results, (p) => this.race(p));
    }
  }

  /** Event tags of the gang (i = '') or of its i-th card's rank. */
  private tags(i: number | ''): EventTags {
    const j = this.job;
    return { block: j.block, attempt: j.attempt, epoch: j.epoch, host: this.opts.host, card: i === '' ? '' : (j.cards[i] as string), rank: i === '' ? '' : this.rankOf(i) };
  }

  /** The global rank of this host's i-th card (spread gangs: first_rank + i). */
  private rankOf(i: number): number {
    return (this.job.first_rank ?? 0) + i;
  }

  /** First failure wins: every rank is killed at once, every await below rejects with it. */
  fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    this.closing = true;
    for (const r of this.ranks) r.kill();
    this.log.error({ err }, 'block attempt failed; ranks killed');
    this.rejectFailed(err);
  }

  /**
   * The cancel notice. In the rep loop: abort the rep in flight and commit the measured ones,
   * the rest `cancelled`. Before it (ranks starting, gates) there is nothing to keep: the
   * attempt fails and the scheduler accounts its reps cancelled. A gang across hosts stops as one
   * (its parts' collectives meet): it fails too, and no part commits.
   */
  cancel(reason: string): void {
    if (this.failure || this.cancelReason !== null) return;
    const j = this.job;
    if (this.spread !== null || !this.measuring) {
      const when = this.spread !== null ? 'as a whole (a gang across hosts)' : 'before its first rep';
      this.fail(new LeaseLostError(`block ${j.block} attempt ${j.attempt} (epoch ${j.epoch}) cancelled ${when}: ${reason}`));
      return;
    }
    this.cancelReason = reason;
    this.log.info({ reason }, 'cancelled: aborting the rep in flight, committing the measured reps');
    this.wakeCancelled();
  }

  /** Kills the ranks mid-rep without failing the gang: the aborted rep is simply not kept. */
  private abortRanks(): void {
    this.closing = true;
    this.aborted = true;
    for (const r of this.ranks) r.kill();
  }

  private race<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.failed]);
  }

  async run(): Promise<BlockOutcome> {
    const job = this.job;
    const planned = sequenceReps(job.sequence);
    const reps: CommitRep[] = [];
    const gates: CommitGate[] = [];
    // the local lease deadline: ranks die when no renew succeeded within the TTL, even if Redis never answers
    const keeper = new LeaseKeeper({
      ttlMs: this.opts.leaseTtlMs,
      everyMs: this.opts.renewEveryMs,
      renew: () => this.renew(),
      onLost: (why) => this.fail(new LeaseLostError(`${why} (block ${job.block} attempt ${job.attempt}, epoch ${job.epoch})`)),
    });
    let committed = false;
    this.log.info({ cards: job.cards, reps: planned.length }, 'block attempt starting');
    try {
      await this.race(keeper.start());
      this.events.worker(this.tags(''), 'block-start', { cards: job.cards, sequence: job.sequence });
      await this.guard([]);
      await this.startRanks();
      this.hellos = await this.race(Promise.all(this.ranks.map((r) => r.ready)));

      const identity = armsNeedingIdentity(job);
      for (const [i, arm] of identity.entries()) gates.push(await this.gate(arm, i));

      // design probe: each planned rep is one `probe` request (five probe lines per rank)
      const probing = job.workload.runtime === 'native' && job.workload.kind === 'probe';
      const probes: ProbeRecord[] = [];
      let stoppedAt: number | null = null;
      // The foreign-process look after a rep runs while the next rep measures (on a GPU host it is
      // an nvidia-smi call, 0.1-0.5 s: card time otherwise idle between every two reps); its
      // verdict is read once that rep has answered. A rep that ran while a look found a foreign
      // process is not kept: `fail` fails the block, `wait` waits for it to go and runs the rep again.
      let look: Promise<string[]> | null = null;
      // One-deep pipeline of reps: the rep after the one being answered is already written to
      // every rank, so graphrt starts it the moment it has written the answer before it; the
      // worker's turnaround (the answer parsed and streamed, the result kept, the look started:
      // a fork and exec of nvidia-smi on a GPU host) falls inside a rep, not between two. Only where
      // every rank's process serves both in order (RankHandle.queues), never for probes (their
      // lines are gathered per request). `inFlight` is planned[i], sent; `behind` is planned[i + 1].
      type Sent = { p: PlannedRep; measuring: Promise<{ rep: CommitRep; record: ProbeRecord | null }> };
      const send = (q: PlannedRep): Sent => {
        const measuring = probing ? this.probe(q) : this.rep(q).then((rep) => ({ rep, record: null }));
        // a rep sent behind one that fails is never awaited: the block fails with the first
        measuring.catch(() => {});
        return { p: q, measuring };
      };
      let inFlight: Sent | null = null;
      let behind: Sent | null = null;
      const mayStop = () => this.spread === null && (this.deps.stopping() || this.cancelReason !== null);
      this.measuring = true;
      for (let i = 0; i < planned.length; ) {
        const p = planned[i] as PlannedRep;
        // a spread gang's hosts must run the same reps (their collectives meet): no early stop.
        // A rep already sent is in flight: it runs to its end and is kept.
        if (inFlight === null) {
          if (mayStop()) {
            stoppedAt = p.position;
            break;
          }
          inFlight = send(p);
        }
        const next = planned[i + 1];
        if (behind === null && next !== undefined && !probing && !mayStop() && this.queues(p, next)) behind = send(next);
        const measured = await Promise.race([inFlight.measuring, this.cancelledSignal]);
        if (measured === null) {
          // cancelled mid-rep: its ranks die, the rep is not kept (nor the one behind it), nor the look at the rep before
          this.abortRanks();
          look = null;
          stoppedAt = p.position;
          break;
        }
        const found = look === null ? [] : await this.race(look);
        look = null;
        if (found.length > 0) {
          // this rep ran beside a foreign process, and the one behind it ran after it before
          // anyone looked again: neither is kept; both run again once the card is ours
          await this.guard(this.ourPids(), found);
          if (behind !== null) await this.race(behind.measuring);
          inFlight = behind = null;
          continue;
        }
        reps.push(measured.rep);
        if (measured.record !== null) probes.push(measured.record);
        i++;
        inFlight = behind;
        behind = null;
        look = this.look(this.ourPids());
        look.catch(() => {});
      }
      if (look !== null) await this.guard(this.ourPids(), await this.race(look));
      this.closing = true;
      const cancelled = this.cancelReason;
      const notRun: FailedRep[] =
        stoppedAt === null
          ? []
          : planned.slice(stoppedAt).map((p) => ({
              block: job.block,
              arm: p.arm,
              rep: p.rep,
              ...(cancelled !== null
                ? { kind: 'cancelled' as const, reason: `cancelled: ${cancelled} (attempt ${job.attempt})` }
                : { reason: `not run: the worker of host ${this.opts.host} was stopped (SIGTERM) before this rep (attempt ${job.attempt})` }),
            }));
      // The ranks' lines went to the stream off the measurement path; every one of them is in
      // Redis before the commit that makes the block count, so a reader of a committed block finds them all.
      await this.race(this.events.flush());
      if (probes.length > 0) {
        const written = await this.race(this.deps.results.commitProbes({ experiment: job.experiment, block: job.block, epoch: job.epoch, cards: job.cards, records: probes }));
        if (!written.written) throw new LeaseLostError(`probe records of block ${job.block} attempt ${job.attempt} refused: ${written.why}; none of its probes is counted`);
      }
      if (this.spread !== null && !this.spread.leads) {
        await this.spread.stageAndAwaitCommit({ cards: job.cards, reps, gates });
        committed = true;
        this.log.info({ measured: reps.length }, 'part staged; the leading part committed the block');
        return { experiment: job.experiment, block: job.block, attempt: job.attempt, epoch: job.epoch, measured: reps.length, not_run: 0, gates: gates.map((g) => ({ arm: g.arm, pass: g.result.pass })) };
      }
      // a spread gang commits once, from its leading part, every part's results over every part's leases
      const gang = this.spread === null ? { cards: job.cards, reps, gates } : await this.spread.gather({ cards: job.cards, reps, gates });
      const res = await this.race(
        this.deps.results.commitBlock({
          experiment: job.experiment, block: job.block, attempt: job.attempt, epoch: job.epoch, host: this.opts.host,
          cards: gang.cards, reps: gang.reps, notRun, gates: gang.gates,
        }),
      );
      if (this.spread !== null) await this.spread.forget().catch(() => undefined);
      if (!res.committed) {
        if (res.why === 'gone') {
          throw new OrchError('REDIS_DATA_LOST', `results of block ${job.block} attempt ${job.attempt} refused: experiment ${job.experiment} no longer exists in Redis (it restarted without its data); nothing was written`);
        }
        throw res.why === 'epoch'
          ? new LeaseLostError(`results of block ${job.block} attempt ${job.attempt} refused: card ${res.card} is ${res.holder === null ? 'no longer leased' : `leased under epoch ${res.holder}`}, not epoch ${job.epoch}; none of its reps is counted`)
          : new OrchError('BLOCK_ALREADY_COMMITTED', `results of block ${job.block} attempt ${job.attempt} refused: attempt ${res.prior.attempt} (epoch ${res.prior.epoch}, host ${res.prior.host}) already committed this block`);
      }
      committed = true;
      this.events.worker(this.tags(''), 'block-committed', { measured: reps.length, not_run: notRun.length });
      this.log.info({ measured: reps.length, not_run: notRun.length }, 'block attempt committed');
      return {
        experiment: job.experiment, block: job.block, attempt: job.attempt, epoch: job.epoch,
        measured: reps.length, not_run: notRun.length,
        gates: gates.map((g) => ({ arm: g.arm, pass: g.result.pass })),
      };
    } catch (caught) {
      const err = this.failure ?? (caught as Error);
      this.fail(err);
      if (!committed) {
        const reason = `attempt ${job.attempt} failed: ${err.message}`;
        await this.deps.results
          .failReps(job.experiment, job.block, job.attempt, planned.map((p) => ({ block: job.block, arm: p.arm, rep: p.rep, reason })))
          .catch((e: unknown) => this.log.warn({ err: e }, 'failed reps not recorded'));
      }
      this.events.worker(this.tags(''), 'block-failed', { reason: err.message });
      throw toJobError(err);
    } finally {
      keeper.stop();
      this.closing = true;
      await Promise.all(this.ranks.map((r) => (this.failure || this.aborted ? (r.kill(), r.exited) : r.close(this.opts.closeGraceMs))));
      if (this.rendezvousDir !== null) rmSync(this.rendezvousDir, { recursive: true, force: true });
      await this.deps.leases
        .release({ cards: job.cards, epoch: job.epoch })
        .catch((err: unknown) => this.log.warn({ err }, 'leases not released; they expire with their TTL'));
      await this.events.flush();
    }
  }

  /** Extends the gang's leases; a refusal is a lost gang. */
  private async renew(): Promise<void> {
    if (this.failure) return;
    const r = await this.deps.leases.renew({ cards: this.job.cards, owner: leaseOwnerOf({ ...this.job, host: this.opts.host }), epoch: this.job.epoch, ttlMs: this.opts.leaseTtlMs });
    if (!r.ok) {
      this.fail(new LeaseLostError(`lease of card ${r.card} lost (${r.reason}) by block ${this.job.block} attempt ${this.job.attempt} (epoch ${this.job.epoch})`));
    }
  }

  private async startRanks(): Promise<void> {
    const job = this.job;
    const world = job.world ?? job.cards.length;
    // A fresh directory per attempt (short: Unix socket paths hold 107 bytes); the ranks'
    // rendezvous is the barrier before the first op.
    if (world > 1) this.rendezvousDir = mkdtempSync(join(tmpdir(), 'orch-rv-'));
    const secret = this.opts.rendezvousKey === undefined ? undefined : rendezvousSecret(this.opts.rendezvousKey, job);
    if (this.spread !== null) {
      if (secret === undefined) throw new OrchError('BLOCK_PAYLOAD_INVALID', `block ${job.block} spreads across hosts, whose rendezvous needs the cluster secret this worker was not given`);
      this.ranks = [];
      await this.spread.startRanks(this.rendezvousDir as string, secret, (i, rv) => (this.ranks[i] = this.startRank(i, world, rv)));
      return;
    }
    const rv = this.rendezvousDir === null ? undefined : { address: join(this.rendezvousDir, 'rv.sock'), secret };
    this.ranks = job.cards.map((_, i) => this.startRank(i, world, rv));
  }

  private startRank(i: number, world: number, rendezvous: RankRendezvous | undefined): RankHandle {
    const job = this.job;
    const id = job.cards[i] as string;
    const card = this.opts.cards.get(id) as Card;
    const tags = this.tags(i);
    const rank = this.rankOf(i);
    const handle = this.deps.runner.start({
      job, rank, world, card, lockPath: this.lockPaths[i] as string, rendezvous,
      log: this.log.child({ card: id, rank }),
      onLine: (line: RankLine, raw: string) => {
        if (line.type === 'probe') this.probeLines[i]?.push(line);
        this.events.rankLine(tags, line, raw);
      },
      // a build serves the whole gang: on the host's worker track, not the rank's
      onBuild: ({ event, ...fields }) => this.events.worker(this.tags(''), event, fields as never),
    });
    void handle.exited.then((exit) => {
      this.events.worker(tags, 'rank-exit', { code: exit.code, signal: exit.signal, pid: exit.pid });
      if (!this.closing) this.fail(new RankExitError(exit));
    });
    return handle;
  }

  private ourPids(): number[] {
    return this.ranks.flatMap((r) => r.pids());
  }

  /** Foreign processes on any card of the gang: fail naming them, or wait until they are gone. */
  private async guard(ours: number[], seen?: string[]): Promise<void> {
    let waitingSince: number | null = null;
    for (;;) {
      // `seen`: what a look already running found; later rounds look again
      const found = seen ?? (await this.race(this.look(ours)));
      seen = undefined;
      if (found.length === 0) {
        if (waitingSince !== null) this.events.worker(this.tags(''), 'foreign-gone', { waited_ms: Date.now() - waitingSince });
        return;
      }
      if (this.job.foreign_process === 'fail') throw new OrchError('FOREIGN_PROCESS', found.join('; '));
      if (this.deps.stopping()) {
        throw new OrchError('WORKER_STOPPING', `the worker of host ${this.opts.host} was stopped (SIGTERM) while the block waited for a foreign process: ${found.join('; ')}`);
      }
      if (waitingSince === null) {
        waitingSince = Date.now();
        this.log.warn({ found }, 'foreign process on a leased card; waiting (foreign_process: wait)');
        this.events.worker(this.tags(''), 'foreign-wait', { found });
      }
      await this.race(new Promise((r) => setTimeout(r, this.opts.foreignPollMs)));
    }
  }

  /** One look at every card of the gang, all at once: a description per card a foreign process uses. */
  private async look(ours: number[]): Promise<string[]> {
    const mine = new Set(ours);
    const found = await Promise.all(
      this.job.cards.map(async (id, i) => {
        const card = this.opts.cards.get(id) as Card;
        const procs = await this.deps.probe.list(card, this.lockPaths[i] as string, mine);
        return procs.length > 0 ? describeForeign(card, procs) : null;
      }),
    );
    return found.filter((f): f is string => f !== null);
  }

  /** Whether the rep `next` may be sent to every rank while `current` is answered (RankHandle.queues). */
  private queues(current: PlannedRep, next: PlannedRep): boolean {
    const op = (q: PlannedRep): RankOp => ({ id: opId(this.job, 'rep', q.position), op: 'rep', arm: armOf(this.job, q.arm) });
    const [a, b] = [op(current), op(next)];
    return this.ranks.length > 0 && this.ranks.every((r) => r.queues?.(a, b) === true);
  }

  /** Sends one op to every rank; each must answer with a final line of `type`. */
  private async all<T extends 'rep' | 'gate' | 'probe'>(op: RankOp, type: T): Promise<Extract<RankLine, { type: T }>[]> {
    const lines = await this.race(Promise.all(this.ranks.map((r) => r.request(op, this.opts.requestTimeoutMs))));
    return lines.map((line, i) => {
      if (line.type !== type) {
        const what = line.type === 'error' ? `error ${line.code}: ${line.message}` : `a "${line.type}" line`;
        throw new OrchError('RANK_ANSWERED_ERROR', `rank ${this.rankOf(i)} on card ${this.job.cards[i]} answered ${op.op} ${op.id} (arm ${op.arm.name}) with ${what}`);
      }
      return line as Extract<RankLine, { type: T }>;
    });
  }

  private async gate(arm: BlockArm, i: number): Promise<CommitGate> {
    const lines = await this.all({ id: opId(this.job, 'identity', i), op: 'identity', arm }, 'gate');
    const bad = lines.map((l) => l.first_bad_replay).filter((x): x is number => x !== null);
    return {
      block: this.job.block,
      arm: arm.name,
      result: {
        block: this.job.block,
        arm: arm.name,
        name: 'identity',
        pass: lines.every((l) => l.pass),
        first_bad_replay: bad.length > 0 ? Math.min(...bad) : null,
        detail: lines.map((l, i) => ({
          rank: this.rankOf(i), card: this.job.cards[i] as string, pass: l.pass, replays: l.replays, first_bad_replay: l.first_bad_replay,
          eager_hashes: l.eager_hashes, graph_hashes: l.graph_hashes, nodes: l.nodes, launches_per_step: l.launches_per_step,
        })),
      },
    };
  }

  /**
   * Design probe: one `probe` request on every rank; its five lines per rank become the probe
   * record, and a rep without steps (committed, so the rep counts as measured).
   */
  private async probe(p: PlannedRep): Promise<{ rep: CommitRep; record: ProbeRecord }> {
    const job = this.job;
    this.probeLines = job.cards.map(() => []);
    const finals = await this.all({ id: opId(job, 'probe', p.position), op: 'probe', arm: armOf(job, p.arm) }, 'probe');
    const backend = this.hellos[0]?.backend;
    if (backend !== 'cpu' && backend !== 'cuda') throw new OrchError('RANK_ANSWERED_ERROR', `block ${job.block}: probe answered by a rank whose hello says backend ${backend ?? 'none'}, not graphrt's cpu or cuda`);
    const ranks = finals.map((_, i) => ({
      rank: this.rankOf(i),
      card: job.cards[i] as string,
      device: deviceOf(this.hellos[i]),
      probes: (this.probeLines[i] ?? []).map((l) => ({ name: l.name, pass: l.pass, detail: l.detail })),
    }));
    const common = { experiment: job.experiment, block: job.block, attempt: job.attempt, epoch: job.epoch, arm: p.arm, rep: p.rep, position: p.position };
    return {
      record: { ...common, backend, host: this.opts.host, ranks },
      rep: { block: job.block, arm: p.arm, rep: p.rep, result: { ...common, step_ms: [], backend, mode: 'graph', host: this.opts.host, cards: job.cards } },
    };
  }

  /** One rep on every rank; the gang's step time is the slowest rank's, per step. */
  private async rep(p: PlannedRep): Promise<CommitRep> {
    const job = this.job;
    const lines = await this.all({ id: opId(job, 'rep', p.position), op: 'rep', arm: armOf(job, p.arm) }, 'rep');
    const first = lines[0]!;
    const perRank = lines.map((l) => l.step_ms);
    const steps = Math.min(...perRank.map((s) => s.length));
    const step_ms = Array.from({ length: steps }, (_, k) => Math.max(...perRank.map((s) => s[k] as number)));
    // A toggle without effect on any rank was not measured by this rep: the report must say so.
    const unsupported = GRAPHRT_TOGGLES.filter((t) => lines.some((l) => l.backend !== 'command' && l.unsupported.includes(t)));
    return {
      block: job.block,
      arm: p.arm,
      rep: p.rep,
      result: {
        experiment: job.experiment, block: job.block, attempt: job.attempt, epoch: job.epoch, arm: p.arm, rep: p.rep,
        position: p.position, step_ms, backend: first.backend, mode: first.mode,
        ...(first.backend === 'command' ? {} : { launches_per_step: first.launches_per_step, nodes: first.nodes, hashes: first.hashes, unsupported }),
        host: this.opts.host, cards: job.cards,
      },
    };
  }
}

/** The device a rank's hello names (graphrt's `device`), `?` for a rank without one. */
function deviceOf(hello: RankHelloLine | undefined): string {
  return hello !== undefined && 'device' in hello && typeof hello.device === 'string' ? hello.device : '?';
}

/** `steps: Too small: expected number to be >=1; sequence[1]: unknown arm "C"` */
function formatIssues(err: z.ZodError): string {
  return err.issues
    .map((i) => {
      const path = i.path.map((k, n) => (typeof k === 'number' ? `[${k}]` : n === 0 ? String(k) : `.${String(k)}`)).join('');
      return `${path || '(root)'}: ${i.message}`;
    })
    .join('; ');
}
