/**
 * A resident command rank (`workload.run.mode: resident`): the user's program, started once per
 * rank for the block attempt, speaking the rank protocol through a rank library
 * (ranklib/PROTOCOL.md). The protocol itself — hello, the one-deep pipeline, id and arm matching,
 * faults, timeouts — is worker/rank-protocol.ts, the same class graphrt's ranks run on; this file
 * is what differs:
 *
 * - before the program starts: its builds and the preflight (command-builds.ts), then the card's
 *   lock, taken by the worker on its own open file description and held there until the program
 *   has exited (worker/rank-process.ts): the program never gets it, so nothing it leaves behind
 *   keeps the card; the program's process group is tethered to the worker and killed whole at
 *   the rank's end (spawnRank);
 * - the program's environment: minimal (program-env.ts: never a credential), with the spec's
 *   run.env, the card (CUDA_VISIBLE_DEVICES) and the protocol's ORCH_* variables;
 * - its hello is checked against the block (every toggle an arm sets must be one it understands)
 *   and becomes the command runtime's hello line, with the builds and the program's own hello;
 * - its answers become command-runtime lines (resident-answer.ts), the identity gate judged here;
 * - its stderr lines reach the event stream as `output` lines of the request in flight;
 * - in a gang: torchrun's environment (command-gang.ts) and its `exchange` lines, answered on
 *   stdin with rank 0's bytes (worker/gang-exchange.ts), at most MAX_EXCHANGES per attempt.
 */
import { closeSync } from 'node:fs';
import type { ChainFloorRun } from '../../jobs/chain-floor-run.ts';
import type { CommandHello, CommandLine, CommandOutput } from '../../jobs/command-line.ts';
import { OrchError, UserInputError } from '../../jobs/errors.ts';
import { messageOf } from '../../jobs/message-of.ts';
import { exchangeAnswer, MAX_EXCHANGES, type OrchRankExchange } from '../../jobs/orch-rank-exchange.ts';
import {
  type OrchRankHello,
  type OrchRankLine,
  type OrchRankRep,
  orchRankRequest,
} from '../../jobs/orch-rank-protocol.ts';
import type { RankOutput } from '../../jobs/rank-output-tail.ts';
import { openLockFile } from '../../store/private-dir.ts';
import { LOCK_BUSY_EXIT, lockDescription, processGroupPids } from '../rank-process.ts';
import type { RankProtocol } from '../rank-protocol.ts';
import {
  type RankExit,
  type RankHandle,
  type RankLine,
  type RankOp,
  RankProtocolError,
  type RankStart,
} from '../rank-runner.ts';
import type { RunAs } from '../run-as.ts';
import { measureChainFloor } from './chain-floor.ts';
import {
  type CommandBuilds,
  type CommandWorkload,
  type EnsureBuild,
  type PrepareOptions,
  prepareCommandBuilds,
} from './command-builds.ts';
import { visibleDevices } from './command-gang.ts';
import {
  type PreparedRank,
  type PreparedSink,
  type PreparedSlots,
  preparedKeepMs,
  preparedKey,
  preparedWithin,
  unadoptedSink,
} from './prepared-slots.ts';
import { type RankCaches, rankCaches } from './rank-caches.ts';
import { misfit, residentError, residentGate, residentRep } from './resident-answer.ts';
import { DEFAULT_HELLO_TIMEOUT_S, HELLO_HINT, spawnResidentProgram } from './spawn-resident.ts';

const COUNTS_OFF =
  'off: workload.run.launch_counts is not true (CUPTI in the process slows timed steps: the measured cost is under this table)';

export class ResidentCommandRank implements RankHandle {
  readonly rank: number;
  readonly card: RankStart['card'];
  readonly ready: Promise<CommandHello>;
  readonly exited: Promise<RankExit>;
  private proto: RankProtocol<OrchRankLine> | null = null;
  /** the prepared process this rank waits on to finish prepare() (adopt), before it is `proto` */
  private adopting: RankProtocol<OrchRankLine> | null = null;
  private program: OrchRankHello | null = null;
  /** the requests written and not yet answered, oldest first (stderr lines belong to the first) */
  private readonly inFlight: RankOp[] = [];
  /** the executor ended the rank (kill or close) */
  private ending = false;
  /** the rank ended before its program started (a build failed, the card was busy) */
  private preStart: RankExit | null = null;
  private resolveExited!: (e: RankExit) => void;
  /** exchanges asked for this attempt (MAX_EXCHANGES at most), and the one waited for now */
  private exchanges = 0;
  private waitingFor: string | null = null;
  /** the builds' artifact directory, once built (a prepared next rank runs the same build) */
  private artifactDir: string | null | undefined;
  /** the build's compiler caches on this host (rank-caches.ts) */
  private caches: RankCaches | null = null;
  /** how this rank's program started: adopted from the host phase, or inside the lease (and why) */
  startedHow: { hostPhase: true; prepare_ms: number; waited_ms: number } | { hostPhase: false; why: string | null } = {
    hostPhase: false,
    why: null,
  };

  constructor(
    private readonly s: RankStart,
    private readonly workload: CommandWorkload,
    private readonly opts: PrepareOptions & {
      injectLib?: string | null;
      graphrt?: string | null;
      runAs?: RunAs | null;
      slots?: PreparedSlots;
    },
    private readonly ensure: EnsureBuild,
  ) {
    this.rank = s.rank;
    this.card = s.card;
    this.exited = new Promise<RankExit>((r) => (this.resolveExited = r));
    this.ready = this.start();
    this.ready.catch(() => {});
  }

  pids(): number[] {
    const pid = this.proto?.pids()[0];
    return pid === undefined ? [] : processGroupPids(pid);
  }

  output(): RankOutput {
    return this.proto?.output() ?? { stdout: [], stderr: [] };
  }

  /** One program serves every request in order. */
  queues(): boolean {
    return true;
  }

  async request(op: RankOp, timeoutMs: number): Promise<RankLine> {
    const proto = this.proto;
    const program = this.program;
    if (proto === null || program === null)
      throw new OrchError(
        'RANK_REQUEST_INVALID',
        `rank ${this.rank}: ${op.op} ${op.id} sent before the program said hello`,
      );
    // graphrt's capture probe; a resident rank's probe is the trace probe (op trace)
    if (op.op === 'probe')
      return this.answer(
        residentError(
          {
            v: 1,
            type: 'error',
            code: 'BAD_REQUEST',
            message: 'a resident command rank has no capture probe op: its design probe sends trace requests',
            fatal: false,
            final: true,
          },
          op.id,
        ),
      );
    this.inFlight.push(op);
    try {
      const line = await proto.request(op, Math.min(timeoutMs, this.workload.run.timeout_s * 1000));
      return this.answer(this.translate(line, op, program));
    } finally {
      this.inFlight.splice(this.inFlight.indexOf(op), 1);
    }
  }

  kill(): void {
    this.ending = true;
    if (this.proto !== null) this.proto.kill();
    else this.endBeforeStart('SIGKILL');
  }

  async close(graceMs: number): Promise<RankExit> {
    this.ending = true;
    if (this.proto !== null) return this.proto.close(graceMs);
    this.endBeforeStart(null);
    return this.exited;
  }

  private endBeforeStart(signal: string | null): void {
    // a prepared process being adopted has not opened: nothing of it to end gracefully, and its
    // prepare() may run for minutes (the heartbeat's cancel cannot reach it out of its slot)
    this.adopting?.kill();
    void this.ready
      .catch(() => undefined)
      .then(() => {
        if (this.proto === null) this.resolveExited(this.preStart ?? this.noProcess(null, signal, null));
      });
  }

  /** workload.run.hello_timeout_s in ms: the program's start, prepare() included, has that long. */
  private helloTimeoutMs(): number {
    return (this.workload.run.hello_timeout_s ?? DEFAULT_HELLO_TIMEOUT_S) * 1000;
  }

  private noProcess(code: number | null, signal: string | null, lastError: string | null): RankExit {
    return { rank: this.rank, card: this.card.id, pid: null, code, signal, lastError, fault: null };
  }

  private async start(): Promise<CommandHello> {
    let prepared: CommandBuilds;
    try {
      prepared = await prepareCommandBuilds(this.s, this.workload, this.ensure, this.opts);
    } catch (err) {
      this.preStart = this.noProcess(null, null, messageOf(err));
      throw err;
    }
    this.artifactDir = prepared.artifactDir;
    this.caches = rankCaches(this.opts.buildRoot, prepared.hello.build?.key ?? null, this.opts.runAs ?? null);
    const { proto, floor } = await this.startUnderLock(prepared.artifactDir);
    void proto.exited.then((e) => this.resolveExited(e));
    // the next block's prepare() starts beside this one's setup(), not after it: the block before
    // the next one is the spec's own size (the first) or sized to outlast prepare() (block-sizing.ts)
    this.prepareNextIfDue();
    const hello = await proto.ready;
    if (hello.type !== 'hello') throw new OrchError('RANK_PROTOCOL', `rank ${this.rank}: ready without a hello`);
    this.checkToggles(hello);
    this.program = hello;
    const { v: _v, type: _t, final: _f, ...program } = hello;
    const started = {
      host_phase: this.startedHow.hostPhase,
      ...(this.startedHow.hostPhase || this.startedHow.why === null ? {} : { why: this.startedHow.why }),
      ...(this.startedHow.hostPhase ? { prepare_waited_ms: this.startedHow.waited_ms } : {}),
      caches: this.caches.state,
    };
    const line: CommandHello = {
      v: 1,
      type: 'hello',
      backend: 'command',
      pid: hello.pid,
      ...prepared.hello,
      program,
      started,
      ...(floor === null ? {} : { graph_node_floor: floor }),
      final: true,
    };
    this.s.onLine(line, JSON.stringify(line));
    return line;
  }

  /**
   * More blocks to come: the next one's process starts now in the host phase, unless one of this
   * experiment and build already waits in the card's slots (the build phase's spare); either is
   * kept while this rank runs and for the longer of the hello timeout and five minutes after
   * (prepared-slots.ts keepWhile, preparedKeepMs). One rank alone on its card only (a gang's ranks
   * exchange in setup(), which the host phase would hold up), never for a trace probe.
   */
  private prepareNextIfDue(): void {
    const { job, world } = this.s;
    const slots = this.opts.slots;
    if (slots === undefined || (job.blocks_after ?? 0) === 0 || world !== 1 || job.trace_probe === true) return;
    const keepMs = preparedKeepMs(this.helloTimeoutMs());
    try {
      const key = preparedKey(job.experiment, this.builtDir());
      if (!slots.holds(this.card.id, key)) this.prepareNext(slots, keepMs);
      slots.keepWhile(this.card.id, key, keepMs, this.exited);
    } catch (err) {
      this.s.log.warn({ err }, "the next block's rank could not start in the host phase: it starts inside its lease");
    }
  }

  /**
   * Locks the card's description and starts the program; the worker's descriptor keeps the lock
   * until the program has exited (closed then, or at once when it does not start). A trace probe
   * first runs graphrt's chain on the same description (the floor).
   */
  private async startUnderLock(
    artifactDir: string | null,
  ): Promise<{ proto: RankProtocol<OrchRankLine>; floor: ChainFloorRun | null }> {
    const taken =
      this.s.job.trace_probe === true
        ? null
        : (this.opts.slots?.take(this.card.id, preparedKey(this.s.job.experiment, artifactDir)) ?? null);
    if (taken?.kind === 'fallback') {
      this.startedHow = { hostPhase: false, why: taken.why };
      this.s.log.warn(
        { why: taken.why },
        'the prepared rank process cannot be adopted: the program starts inside the lease',
      );
    }
    const fd = openLockFile(this.s.lockPath);
    try {
      await lockDescription(fd, this.s.lockPath).catch((err: unknown) => {
        if (taken?.kind === 'adopt') taken.rank.proto.kill();
        throw err;
      });
      const floor = this.s.job.trace_probe === true ? await this.chainFloor(fd) : null;
      if (this.ending) {
        if (taken?.kind === 'adopt') taken.rank.proto.kill();
        throw new OrchError(
          'LEASE_LOST',
          `rank ${this.rank} on card ${this.card.id} was ended while it took the card's lock`,
        );
      }
      const adopted = taken?.kind === 'adopt' ? await this.adopt(taken.rank) : null;
      if (this.ending) {
        // never `proto`: endBeforeStart resolves `exited` only while proto is null
        adopted?.kill();
        throw new OrchError(
          'LEASE_LOST',
          `rank ${this.rank} on card ${this.card.id} was ended while its prepared process finished prepare()`,
        );
      }
      this.proto = adopted ?? this.spawnProgram(artifactDir, null);
      void this.proto.exited.finally(() => closeSync(fd));
      return { proto: this.proto, floor };
    } catch (err) {
      closeSync(fd);
      this.preStart = this.noProcess(
        err instanceof OrchError && err.code === 'CARD_BUSY' ? LOCK_BUSY_EXIT : null,
        null,
        messageOf(err),
      );
      throw err;
    }
  }

  private chainFloor(lockFd: number): Promise<ChainFloorRun> {
    const { card, log } = this.s;
    return measureChainFloor({
      graphrt: this.opts.graphrt ?? null,
      backend: card.backend,
      uuid: card.backend === 'cuda' ? card.uuid : '',
      lockFd,
      injectLib: this.opts.injectLib ?? null,
      warn: (msg) => log.warn(msg),
    });
  }

  /**
   * The prepared process, once its prepare() is done (it may still be running: this rank waits,
   * holding the card, which is still shorter than a start from nothing, for hello_timeout_s at
   * most), opened on the card; null when it ended before (PREPARE_TOUCHED_CUDA, a crash in
   * prepare()) or ran past that deadline (ended then): the program then starts inside the lease,
   * and startedHow says why. `adopting` lets kill() end it meanwhile.
   */
  private async adopt(rank: PreparedRank): Promise<RankProtocol<OrchRankLine> | null> {
    rank.sink.onLine = (line) => this.onProgramLine(line);
    rank.sink.onStderr = (l) => this.forwardStderr(l);
    rank.sink.request = (op) => orchRankRequest(this.s.job, op);
    rank.sink.onExchange = (line) => this.exchange(line as OrchRankExchange);
    this.adopting = rank.proto;
    const waitFrom = performance.now();
    const prepared = await preparedWithin(rank.proto, this.helloTimeoutMs()).finally(() => {
      this.adopting = null;
    });
    if (prepared instanceof Error) {
      this.startedHow = { hostPhase: false, why: prepared.message };
      this.s.log.warn(
        { why: prepared.message },
        'the prepared rank process cannot be opened: the program starts inside the lease',
      );
      return null;
    }
    // the card's lock is this worker's now: the process may see the card
    rank.proto.open(this.devices(), this.card);
    // the card waited for the part of prepare() that outlasted the block before: charged to it
    const waited = Math.round(Math.max(prepared.at_ms - waitFrom, 0) * 1000) / 1000;
    this.startedHow = { hostPhase: true, prepare_ms: prepared.prepare_ms, waited_ms: waited };
    return rank.proto;
  }

  /**
   * Starts this rank's program again in the host phase (ORCH_HOST_PHASE=1, no device visible, no
   * card lock) for the next block of this experiment on this card, and leaves it in `slots`,
   * ended after `keepMs` unless that block's rank adopts it. Called while this rank holds the card.
   */
  prepareNext(slots: PreparedSlots, keepMs: number): PreparedRank {
    const artifactDir = this.builtDir();
    const sink = unadoptedSink();
    const rank: PreparedRank = {
      key: preparedKey(this.s.job.experiment, artifactDir),
      experiment: this.s.job.experiment,
      proto: this.spawnProgram(artifactDir, sink),
      sink,
    };
    slots.put(this.card.id, rank, keepMs);
    return rank;
  }

  /** The builds' artifact directory (null: the program needs none); an error before they are ready. */
  private builtDir(): string | null {
    if (this.artifactDir === undefined)
      throw new OrchError(
        'RANK_REQUEST_INVALID',
        `rank ${this.rank}: the next block prepared before its builds were ready`,
      );
    return this.artifactDir;
  }

  /** The card as CUDA_VISIBLE_DEVICES names it: a cpu card hides every GPU, as graphrt's cpu ranks do. */
  private devices(): string {
    return visibleDevices(this.s.card, this.s.commandGang, this.workload.run.launcher);
  }

  private onProgramLine(line: OrchRankLine): void {
    if (line.type === 'error' && this.program === null) this.answer(residentError(line, 'hello'));
  }

  /** The program, started now: inside the lease (`sink` null), or in the host phase, its lines to `sink` until adopted. */
  private spawnProgram(artifactDir: string | null, sink: PreparedSink | null): RankProtocol<OrchRankLine> {
    const { s } = this;
    return spawnResidentProgram(
      {
        rank: s.rank,
        world: s.world,
        card: s.card,
        ...(s.commandGang === undefined ? {} : { commandGang: s.commandGang }),
        workload: this.workload,
        artifactDir,
        caches: this.caches,
        traceProbe: s.job.trace_probe === true,
        injectLib: this.opts.injectLib ?? null,
        runAs: this.opts.runAs ?? null,
        log: s.log,
        devices: sink === null ? this.devices() : null,
      },
      sink ?? {
        // answers reach the stream once translated (request); a fatal error before hello, as it came
        onLine: (line) => this.onProgramLine(line),
        onStderr: (l) => this.forwardStderr(l),
        request: (op) => orchRankRequest(s.job, op),
        helloHint: () =>
          this.waitingFor === null
            ? HELLO_HINT
            : `it waits for exchange "${this.waitingFor}", whose bytes rank 0 never published (rank 0 did not reach its exchange)`,
        onExchange: (line) => this.exchange(line as OrchRankExchange),
      },
    );
  }

  /**
   * An exchange line: rank 0's bytes through the gang's staging, answered on stdin (an error
   * line when they do not come). A 17th is a fault (thrown: RankProtocol breaks the protocol).
   */
  private exchange(line: OrchRankExchange): void {
    if (++this.exchanges > MAX_EXCHANGES)
      throw new Error(
        `exchange "${line.key}" is this rank's ${this.exchanges}th of the attempt; at most ${MAX_EXCHANGES}`,
      );
    const gang = this.s.commandGang;
    this.waitingFor = line.key;
    const bytes = line.data === null ? null : Buffer.from(line.data, 'base64');
    const asked =
      gang === undefined
        ? Promise.reject(new Error('this rank has no gang to exchange with (the worker started it without one)'))
        : gang.exchange(line.key, bytes);
    void asked
      .then(
        (data) => exchangeAnswer(line.key, { data }),
        (err: Error) => exchangeAnswer(line.key, { error: err.message }),
      )
      .then((answer) => {
        if (this.waitingFor === line.key) this.waitingFor = null;
        this.s.log.debug({ key: line.key }, 'exchange answered');
        this.proto?.send(answer);
      });
  }

  /** Every toggle an arm sets (and the gate's) must be one the program understands: refused before any rep. */
  private checkToggles(hello: OrchRankHello): void {
    const known = new Set(hello.toggles);
    const used = new Set([
      ...this.s.job.arms.flatMap((a) => Object.keys(a.toggles)),
      ...(this.s.job.gates.identity?.toggle === undefined ? [] : [this.s.job.gates.identity.toggle]),
    ]);
    const unknown = [...used].filter((t) => !known.has(t));
    if (unknown.length === 0) return;
    this.proto?.kill();
    throw new UserInputError(
      'RANK_TOGGLE_UNKNOWN',
      `toggles: the program "${hello.name}" (${hello.library}) does not understand ${unknown.map((t) => `"${t}"`).join(', ')}; it understands ${hello.toggles.join(', ') || 'no toggles'}`,
      {
        hint: `add ${unknown.join(', ')} to the program's toggles, or remove ${unknown.length === 1 ? 'it' : 'them'} from the spec's toggles and workload.toggles`,
      },
    );
  }

  private translate(line: OrchRankLine, op: RankOp, program: OrchRankHello): CommandLine {
    if (line.type === 'error') return residentError(line, op.id);
    if (line.type === 'hello' || line.type === 'prepared')
      throw this.fault(`a "${line.type}" line answering ${op.op} ${op.id}`);
    if (line.type === 'exchange') throw this.fault(`an exchange line answering ${op.op} ${op.id}`);
    const wrong =
      line.type === 'rep' ? op.op !== 'rep' : line.type === 'trace' ? op.op !== 'trace' : op.op !== 'identity';
    if (wrong) throw this.fault(`a "${line.type}" line answering ${op.op} ${op.id}`);
    const bad = misfit(line, this.s.job);
    if (bad !== null) throw this.fault(bad);
    if (line.type === 'trace') return line;
    return line.type === 'rep' ? residentRep(this.countsOff(line), this.s.job) : residentGate(line, program.outputs);
  }

  /** Counting off (the spec's choice): the rank library's "none" says so in the spec's words. */
  private countsOff(line: OrchRankRep): OrchRankRep {
    if (this.workload.run.launch_counts === true || line.launches?.source !== 'none') return line;
    return { ...line, launches: { source: 'none', reason: COUNTS_OFF } };
  }

  /** The program answered what its request did not ask for: it is killed, as for any protocol break. */
  private fault(why: string): RankProtocolError {
    const pid = this.proto?.pids()[0] ?? null;
    this.proto?.kill();
    return new RankProtocolError({ rank: this.rank, card: this.card.id, pid }, why);
  }

  private answer(line: CommandLine): CommandLine {
    this.s.onLine(line, JSON.stringify(line));
    return line;
  }

  private forwardStderr(l: string): void {
    const out: CommandOutput = { v: 1, type: 'output', id: this.inFlight[0]?.id ?? '', stream: 'stderr', line: l };
    this.s.onLine(out, JSON.stringify(out));
  }
}
