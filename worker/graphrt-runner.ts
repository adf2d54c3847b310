/**
 * GraphrtRunner: one resident `graphrt serve` per rank (worker/rank-runner.ts has the seam).
 *
 * The host guard and fate-sharing, per rank process:
 * - `--card-lock <lockdir>/<card>.lock`: graphrt holds the card's flock for its whole life, so a
 *   second process on the card cannot start (CARD_BUSY, exit 4) whatever Redis says; a rank of
 *   several builds holds it as one open file description handed to all its processes instead
 *   (startBuilds below);
 * - `detached: true`: it leads its own process group, and kill() SIGKILLs the group;
 * - stdin is a pipe from this worker: graphrt exits when it closes (the worker died or the block
 *   ended); and the worker's death signal (worker/rank-process.ts).
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { closeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { BlockJob } from '../jobs/block-job.ts';
import { OrchError, UserInputError } from '../jobs/errors.ts';
import { type GraphrtLine, type Hello, parseGraphrtLine } from '../jobs/graphrt-protocol.ts';
import { messageOf } from '../jobs/message-of.ts';
import { toNativeProcess, toNativeRequest } from '../jobs/native-args.ts';
import type { RankHelloLine } from '../jobs/rank-line.ts';
import { RANK_OUTPUT_TAIL_LINES, type RankOutput } from '../jobs/rank-output-tail.ts';
import { toJobError } from '../store/job-error.ts';
import { openLockFile } from '../store/private-dir.ts';
import { BuildCache } from './builds/build-cache.ts';
import { ensureGraphrtBuild } from './builds/graphrt-build.ts';
import { programEnv } from './command/program-env.ts';
import { fateShared, INHERITED_LOCK_FD, LOCK_BUSY_EXIT, lockDescription } from './rank-process.ts';
import { type RankLineSchema, RankProtocol } from './rank-protocol.ts';
import {
  type RankExit,
  RankExitError,
  type RankHandle,
  type RankLine,
  type RankOp,
  type RankRunner,
  type RankStart,
} from './rank-runner.ts';
import { type RunAs, runAsEnv } from './run-as.ts';
import { setAccess } from './run-as-reach.ts';

/** What a graphrt process inherits of the worker's environment beyond a program's basics. */
const GRAPHRT_INHERITS = ['GRAPHRT_*', 'NCCL_*'];

type GraphrtBuilder = (req: Parameters<typeof ensureGraphrtBuild>[1]) => Promise<{ binary: string }>;

export interface GraphrtRunnerOptions {
  /** the host build cache, where graphrt of a build's commit is built (default: ORCH_BUILD_DIR, worker/builds/build-cache.ts) */
  cache?: BuildCache;
  /** graphrt of a build's commit (default: ensureGraphrtBuild in `cache`); a test hands over prebuilt binaries */
  build?: GraphrtBuilder;
  /**
   * The user graphrt of a build's commit runs as (worker/run-as.ts; default: the cache's, who
   * builds it): a user's program like any other; the worker's own graphrt runs as the worker.
   */
  runAs?: RunAs | null;
}

/** The graphrt processes a rank runs: '' the worker's own, else each build its arms name. */
export function rankBuilds(job: BlockJob): string[] {
  const keys = new Set(job.arms.map((a) => a.build ?? ''));
  return [...keys].sort();
}

export class GraphrtRunner implements RankRunner {
  private readonly build: GraphrtBuilder;
  /** One build per commit in flight in this worker, shared by the ranks of a gang. */
  private readonly inFlight = new Map<string, Promise<{ binary: string }>>();

  private readonly runAs: RunAs | null;

  constructor(
    private readonly binary: string,
    opts: GraphrtRunnerOptions = {},
  ) {
    const cache = opts.cache ?? new BuildCache();
    this.build = opts.build ?? ((req) => ensureGraphrtBuild(cache, req));
    this.runAs = opts.runAs ?? cache.runAs;
  }

  start(s: RankStart): RankHandle {
    const keys = rankBuilds(s.job);
    if (keys.length === 1 && keys[0] === '') return startProcess(this.binary, s);
    return this.startBuilds(s, keys);
  }

  /** Only the request that starts a build reports its events: the gang's other ranks would draw the same slice again. */
  private ensure(job: BlockJob, name: string, onEvent: RankStart['onBuild']): Promise<{ binary: string }> {
    const b = job.builds?.builds[name];
    if (b === undefined || job.builds === undefined)
      throw new OrchError(
        'BLOCK_PAYLOAD_INVALID',
        `block ${job.block}: an arm runs build "${name}", which the job's builds do not hold`,
      );
    let p = this.inFlight.get(b.commit);
    if (!p) {
      p = this.build({
        name,
        ref: b.ref,
        commit: b.commit,
        repo: job.builds.repo,
        experiment: job.experiment,
        ...(onEvent ? { onEvent } : {}),
      }).finally(() => this.inFlight.delete(b.commit));
      this.inFlight.set(b.commit, p);
    }
    return p;
  }

  /** A rank whose arms run several graphrt binaries (BuildsRank). */
  private startBuilds(s: RankStart, keys: string[]): RankHandle {
    return new BuildsRank(
      s,
      keys,
      async (key) => (key === '' ? this.binary : (await this.ensure(s.job, key, s.onBuild)).binary),
      this.runAs,
    );
  }
}

/**
 * A rank whose arms run several graphrt binaries: one resident `graphrt serve` per build on the
 * card, each arm's requests to its build's process (interleaved arms never restart one). The
 * card's lock is handed over: the worker opens the lock file (one open file description),
 * locks it with flock(1) — so an older build that knows no lock flag starts on a locked card —
 * passes it to every process as fd 3, and closes its own copy, so the lock lives exactly as
 * long as some process of the rank. A flock belongs to the description: the rank's processes
 * hold it together, and any other process on the card is CARD_BUSY. One process of the rank
 * ending ends the rank: its other processes are killed, and its exit is the rank's.
 */
class BuildsRank implements RankHandle {
  readonly rank: number;
  readonly card: RankStart['card'];
  readonly ready: Promise<RankHelloLine>;
  readonly exited: Promise<RankExit>;
  private readonly procs = new Map<string, RankHandle>();
  /** the executor ended the rank (kill or close) */
  private ending = false;
  /** the first process of the rank to end: the rank's exit */
  private first: RankExit | null = null;
  /** the rank ended before any of its processes started (a build failed, the card was busy): ended when the executor ends it */
  private preStart: RankExit | null = null;
  private resolveExited!: (e: RankExit) => void;
  /** every build's process's hello, once all said it */
  private hellos: readonly RankHelloLine[] = [];

  constructor(
    private readonly s: RankStart,
    private readonly keys: string[],
    /** the graphrt binary of a build key ('' the worker's own) */
    private readonly binaryOf: (key: string) => Promise<string>,
    /** the user a build's process runs as; the worker's own graphrt runs as the worker */
    private readonly runAs: RunAs | null = null,
  ) {
    this.rank = s.rank;
    this.card = s.card;
    this.exited = new Promise<RankExit>((r) => (this.resolveExited = r));
    this.ready = this.start() as Promise<RankHelloLine>;
    this.ready.catch(() => {});
  }

  pids(): number[] {
    return [...this.procs.values()].flatMap((p) => p.pids());
  }

  /** Each build's process printed on its own pipes: their last lines, process after process. */
  output(): RankOutput {
    const all = [...this.procs.values()].map((p) => p.output?.() ?? { stdout: [], stderr: [] });
    return {
      stdout: all.flatMap((o) => o.stdout).slice(-RANK_OUTPUT_TAIL_LINES),
      stderr: all.flatMap((o) => o.stderr).slice(-RANK_OUTPUT_TAIL_LINES),
    };
  }

  processHellos(): readonly RankHelloLine[] {
    return this.hellos;
  }

  // Two builds are two processes on one card: a request written to one while the other
  // answers would run beside it. Only requests of the same build queue behind each other.
  queues(current: RankOp, next: RankOp): boolean {
    return (current.arm.build ?? '') === (next.arm.build ?? '');
  }

  request(op: RankOp, timeoutMs: number): Promise<RankLine> {
    const key = op.arm.build ?? '';
    const p = this.procs.get(key);
    if (p === undefined)
      return Promise.reject(
        new OrchError(
          'RANK_REQUEST_INVALID',
          `rank ${this.s.rank}: arm ${op.arm.name} runs ${this.named(key)}, which this rank did not start`,
        ),
      );
    // a process killed because another of the rank ended reports that one's exit
    return p
      .request(op, timeoutMs)
      .catch((err: unknown) =>
        Promise.reject(this.first !== null && err instanceof RankExitError ? new RankExitError(this.first) : err),
      );
  }

  kill(): void {
    this.endBeforeStart('SIGKILL');
    for (const p of this.procs.values()) p.kill();
  }

  async close(graceMs: number): Promise<RankExit> {
    this.endBeforeStart(null);
    await Promise.all([...this.procs.values()].map((p) => p.close(graceMs)));
    return this.exited;
  }

  private named(key: string): string {
    return key === ''
      ? "this worker's graphrt"
      : `graphrt of build "${key}" (commit ${this.s.job.builds?.builds[key]?.commit.slice(0, 12) ?? '?'})`;
  }

  private noProcess(code: number | null, signal: string | null, lastError: string | null): RankExit {
    return { rank: this.s.rank, card: this.s.card.id, pid: null, code, signal, lastError, fault: null };
  }

  private endBeforeStart(signal: string | null): void {
    this.ending = true;
    if (this.procs.size === 0)
      void this.ready
        .catch(() => undefined)
        .then(() => this.procs.size === 0 && this.resolveExited(this.preStart ?? this.noProcess(null, signal, null)));
  }

  private async start(): Promise<Hello> {
    const s = this.s;
    const binaries = new Map<string, string>();
    try {
      for (const key of this.keys) binaries.set(key, await this.binaryOf(key));
    } catch (err) {
      this.preStart = this.noProcess(null, null, messageOf(err));
      throw toJobError(err, err instanceof OrchError ? `${err.code}: ${err.message}` : undefined);
    }
    if (this.ending)
      throw new OrchError('LEASE_LOST', `rank ${s.rank} on card ${s.card.id} was ended while its builds were made`);
    if (s.rendezvous?.address.startsWith('tcp://')) {
      this.preStart = this.noProcess(null, null, 'builds across hosts');
      throw toJobError(
        new UserInputError(
          'BUILDS_ACROSS_HOSTS',
          `block ${s.job.block}: its gang spreads across hosts, and its arms run graphrt of several builds (${this.keys.map((k) => this.named(k)).join(', ')}); a gang across hosts runs one graphrt per rank for now`,
          {
            hint: 'give the spec blocks.placement: host (a gang on one host), or measure one build per experiment',
          },
        ),
      );
    }
    await this.startUnderLock(binaries);
    void Promise.all([...this.procs.values()].map((p) => p.exited)).then((all) =>
      this.resolveExited(this.first ?? (all[0] as RankExit)),
    );
    this.hellos = await Promise.all(
      [...this.procs.values()].map((p) =>
        p.ready.catch((err: unknown) => Promise.reject(this.first === null ? err : new RankExitError(this.first))),
      ),
    );
    return this.hellos[0] as Hello;
  }

  /** Locks the card's description and starts every build's process on it (fd 3). */
  private async startUnderLock(binaries: Map<string, string>): Promise<void> {
    const s = this.s;
    // a build's processes, as the run-as user, make and join their gang's socket there
    const address = s.rendezvous?.address;
    if (this.runAs !== null && address !== undefined && !address.startsWith('tcp://'))
      setAccess(dirname(address), 0o730, { gid: this.runAs.gid });
    const fd = openLockFile(s.lockPath);
    try {
      await lockDescription(fd, s.lockPath);
      if (this.ending)
        throw new OrchError(
          'LEASE_LOST',
          `rank ${s.rank} on card ${s.card.id} was ended while it took the card's lock`,
        );
      for (const [i, key] of this.keys.entries()) {
        const h = startProcess(
          binaries.get(key) as string,
          { ...s, ...buildRendezvous(s, i) },
          { lockFd: fd, flag: key === '' },
          key === '' ? null : this.runAs,
        );
        this.procs.set(key, h);
        void h.exited.then((e) => {
          if (this.first !== null) return;
          this.first =
            e.lastError === null || key === '' ? e : { ...e, lastError: `${this.named(key)}: ${e.lastError}` };
          // one process of the rank ended: the rank has ended, its other processes with it
          if (!this.ending) for (const p of this.procs.values()) p.kill();
        });
      }
    } catch (err) {
      this.preStart ??= this.noProcess(
        err instanceof OrchError && err.code === 'CARD_BUSY' ? LOCK_BUSY_EXIT : null,
        null,
        messageOf(err),
      );
      throw err;
    } finally {
      // the ranks hold the description now; the worker's copy would keep the card locked after them
      closeSync(fd);
    }
  }
}

/**
 * The gang of the i-th build meets on a socket of its own: every build's processes form a gang of
 * their own (rank r of build b talks only to the other ranks of build b), in the same directory.
 */
function buildRendezvous(s: RankStart, i: number): Pick<RankStart, 'rendezvous'> {
  if (s.rendezvous === undefined) return {};
  return { rendezvous: { ...s.rendezvous, address: `${s.rendezvous.address.replace(/\.sock$/, '')}.${i}.sock` } };
}

/** graphrt's dialect of the rank protocol: its line schemas, its requests made by jobs/native-args.ts. */
export function graphrtLines(job: BlockJob): RankLineSchema<GraphrtLine> {
  return {
    parse: parseGraphrtLine,
    request: (op) => {
      // the trace probe is a resident command rank's; a native block never plans one
      if (op.op === 'trace')
        throw new OrchError('RANK_REQUEST_INVALID', `block ${job.block}: graphrt has no trace op (${op.id})`);
      return JSON.stringify(toNativeRequest(job, op.arm, { op: op.op, id: op.id }));
    },
  };
}

/**
 * One resident `graphrt serve` of `binary` for a rank, speaking the rank protocol
 * (worker/rank-protocol.ts). `lock`: the card's lock handed down as an open file description
 * (`lockFd`, inherited as fd 3), else the process takes `--card-lock PATH`; as `runAs` when given.
 */
function startProcess(
  binary: string,
  s: RankStart,
  lock?: { lockFd: number; flag: boolean },
  runAs: RunAs | null = null,
): RankProtocol<GraphrtLine> {
  const { args, env } = toNativeProcess(s.job, {
    rank: s.rank,
    world: s.world,
    backend: s.card.backend,
    uuid: s.card.uuid,
    lockPath: s.lockPath,
    ...(lock === undefined ? {} : { lockFd: { fd: INHERITED_LOCK_FD, flag: lock.flag } }),
    rendezvous: s.rendezvous,
  });
  const [file, argv] = fateShared(binary, args, (msg) => s.log.warn(msg), runAs);
  const child = spawn(file, argv, {
    detached: true,
    stdio: lock === undefined ? ['pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe', lock.lockFd],
    // graphrt's own knobs and NCCL's pass; the rest of the worker's environment does not (credentials)
    env: { ...programEnv(env, process.env, GRAPHRT_INHERITS), ...runAsEnv(runAs) },
  }) as ChildProcessWithoutNullStreams;
  s.log.debug({ pid: child.pid, cmd: [binary, ...args].join(' ') }, 'rank started');
  return new RankProtocol(child, graphrtLines(s.job), {
    rank: s.rank,
    card: s.card,
    log: s.log,
    onLine: s.onLine,
    program: binary,
  });
}
