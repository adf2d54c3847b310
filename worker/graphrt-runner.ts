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
 *   ended); and, where util-linux `setpriv` exists, PR_SET_PDEATHSIG=SIGKILL, so a worker killed
 *   with -9 takes its ranks with it even in the middle of a long rep.
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { closeSync } from 'node:fs';
import type { BlockJob } from '../jobs/block-job.ts';
import { OrchError, UserInputError } from '../jobs/errors.ts';
import { isFinal, parseGraphrtLine, type GraphrtLine, type Hello } from '../jobs/graphrt-protocol.ts';
import type { RankHelloLine } from '../jobs/rank-line.ts';
import { toJobError } from '../store/job-error.ts';
import { BuildCache } from './build/build-cache.ts';
import { ensureGraphrtBuild } from './build/graphrt-build.ts';
import { MAX_RANK_LINE_BYTES, MAX_RANK_LINE_LABEL, quoteLine } from '../jobs/line-limit.ts';
import { toNativeProcess, toNativeRequest } from '../jobs/native-args.ts';
import { readLines } from './line-reader.ts';
import { openLockFile } from '../store/private-dir.ts';
import { RankExitError, RankProtocolError, type RankExit, type RankHandle, type RankLine, type RankOp, type RankRunner, type RankStart } from './rank-runner.ts';
import { programEnv } from './command/program-env.ts';

/** What a graphrt process inherits of the worker's environment beyond a program's basics. */
const GRAPHRT_INHERITS = ['GRAPHRT_*', 'NCCL_*'];

const STDERR_KEEP = 20;
/** after an error answer, how long to wait for the exit that makes it fatal */
const ERROR_EXIT_WAIT_MS = 500;

let setprivChecked: boolean | undefined;
function hasSetpriv(): boolean {
  if (setprivChecked === undefined) {
    const r = spawnSync('setpriv', ['--pdeathsig', 'KILL', '--', 'true'], { stdio: 'ignore' });
    setprivChecked = !r.error && r.status === 0;
  }
  return setprivChecked;
}

/** The fd a rank process of several builds inherits the card's lock on (the first after stdio). */
const INHERITED_LOCK_FD = 3;
/** flock(1)'s exit code when the card's lock is held by another description (-E). */
const LOCK_BUSY_EXIT = 4;

type GraphrtBuilder = (req: Parameters<typeof ensureGraphrtBuild>[1]) => Promise<{ binary: string }>;

export interface GraphrtRunnerOptions {
  /** the host build cache, where graphrt of a build's commit is built (default: ORCH_BUILD_DIR, worker/build/build-cache.ts) */
  cache?: BuildCache;
  /** graphrt of a build's commit (default: ensureGraphrtBuild in `cache`); a test hands over prebuilt binaries */
  build?: GraphrtBuilder;
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

  constructor(
    private readonly binary: string,
    opts: GraphrtRunnerOptions = {},
  ) {
    const cache = opts.cache ?? new BuildCache();
    this.build = opts.build ?? ((req) => ensureGraphrtBuild(cache, req));
  }

  start(s: RankStart): RankHandle {
    const keys = rankBuilds(s.job);
    if (keys.length === 1 && keys[0] === '') return startProcess(this.binary, s);
    return this.startBuilds(s, keys);
  }

  /** Only the request that starts a build reports its events: the gang's other ranks would draw the same slice again. */
  private ensure(job: BlockJob, name: string, onEvent: RankStart['onBuild']): Promise<{ binary: string }> {
    const b = job.builds?.builds[name];
    if (b === undefined || job.builds === undefined) throw new OrchError('BLOCK_PAYLOAD_INVALID', `block ${job.block}: an arm runs build "${name}", which the job's builds do not hold`);
    let p = this.inFlight.get(b.commit);
    if (!p) {
      p = this.build({ name, ref: b.ref, commit: b.commit, repo: job.builds.repo, experiment: job.experiment, ...(onEvent ? { onEvent } : {}) }).finally(() =>
        this.inFlight.delete(b.commit),
      );
      this.inFlight.set(b.commit, p);
    }
    return p;
  }

  /**
   * A rank whose arms run several graphrt binaries: one resident `graphrt serve` per build on the
   * card, each arm's requests to its build's process (interleaved arms never restart one). The
   * card's lock is handed over: the worker opens the lock file (one open file description),
   * locks it with flock(1) — so an older build that knows no lock flag starts on a locked card —
   * passes it to every process as fd 3, and closes its own copy, so the lock lives exactly as
   * long as some process of the rank. A flock belongs to the description: the rank's processes
   * hold it together, and any other process on the card is CARD_BUSY.
   */
  private startBuilds(s: RankStart, keys: string[]): RankHandle {
    const procs = new Map<string, RankHandle>();
    const named = (key: string) => (key === '' ? "this worker's graphrt" : `graphrt of build "${key}" (commit ${s.job.builds?.builds[key]?.commit.slice(0, 12) ?? '?'})`);
    let ending = false;
    let first: RankExit | null = null;
    let resolveExited!: (e: RankExit) => void;
    const exited = new Promise<RankExit>((r) => (resolveExited = r));
    const noProcess = (code: number | null, signal: string | null, lastError: string | null): RankExit => ({ rank: s.rank, card: s.card.id, pid: null, code, signal, lastError, fault: null });
    /** the rank ended before any of its processes started (a build failed, the card was busy): ended when the executor ends it */
    let preStart: RankExit | null = null;

    const ready = (async (): Promise<Hello> => {
      const binaries = new Map<string, string>();
      try {
        for (const key of keys) binaries.set(key, key === '' ? this.binary : (await this.ensure(s.job, key, s.onBuild)).binary);
      } catch (err) {
        preStart = noProcess(null, null, err instanceof Error ? err.message : String(err));
        throw toJobError(err, err instanceof OrchError ? `${err.code}: ${err.message}` : undefined);
      }
      if (ending) throw new OrchError('LEASE_LOST', `rank ${s.rank} on card ${s.card.id} was ended while its builds were made`);
      if (s.rendezvous?.address.startsWith('tcp://')) {
        preStart = noProcess(null, null, 'builds across hosts');
        throw toJobError(new UserInputError('BUILDS_ACROSS_HOSTS', `block ${s.job.block}: its gang spreads across hosts, and its arms run graphrt of several builds (${keys.map(named).join(', ')}); a gang across hosts runs one graphrt per rank for now`, {
          hint: 'give the spec blocks.placement: host (a gang on one host), or measure one build per experiment',
        }));
      }
      const fd = openLockFile(s.lockPath);
      try {
        await lockDescription(fd, s.lockPath);
        if (ending) throw new OrchError('LEASE_LOST', `rank ${s.rank} on card ${s.card.id} was ended while it took the card's lock`);
        for (const [i, key] of keys.entries()) {
          const h = startProcess(binaries.get(key) as string, { ...s, ...buildRendezvous(s, i) }, { lockFd: fd, flag: key === '' });
          procs.set(key, h);
          void h.exited.then((e) => {
            if (first !== null) return;
            first = e.lastError === null || key === '' ? e : { ...e, lastError: `${named(key)}: ${e.lastError}` };
            // one process of the rank ended: the rank has ended, its other processes with it
            if (!ending) for (const p of procs.values()) p.kill();
          });
        }
      } catch (err) {
        preStart ??= noProcess(err instanceof OrchError && err.code === 'CARD_BUSY' ? LOCK_BUSY_EXIT : null, null, err instanceof Error ? err.message : String(err));
        throw err;
      } finally {
        // the ranks hold the description now; the worker's copy would keep the card locked after them
        closeSync(fd);
      }
      void Promise.all([...procs.values()].map((p) => p.exited)).then((all) => resolveExited(first ?? (all[0] as RankExit)));
      const hellos = await Promise.all([...procs.values()].map((p) => p.ready.catch((err: unknown) => Promise.reject(first === null ? err : new RankExitError(first)))));
      return hellos[0] as Hello;
    })();
    ready.catch(() => {});
    const endBeforeStart = (signal: string | null) => {
      ending = true;
      if (procs.size === 0) void ready.catch(() => undefined).then(() => procs.size === 0 && resolveExited(preStart ?? noProcess(null, signal, null)));
    };

    return {
      rank: s.rank,
      card: s.card,
      pids: () => [...procs.values()].flatMap((p) => p.pids()),
      ready: ready as Promise<RankHelloLine>,
      exited,
      // Two builds are two processes on one card: a request written to one while the other
      // answers would run beside it. Only requests of the same build queue behind each other.
      queues: (current: RankOp, next: RankOp) => (current.arm.build ?? '') === (next.arm.build ?? ''),
      request: (op: RankOp, timeoutMs: number) => {
        const key = op.arm.build ?? '';
        const p = procs.get(key);
        if (p === undefined) return Promise.reject(new Error(`rank ${s.rank}: arm ${op.arm.name} runs ${named(key)}, which this rank did not start`));
        // a process killed because another of the rank ended reports that one's exit
        return p.request(op, timeoutMs).catch((err: unknown) => Promise.reject(first !== null && err instanceof RankExitError ? new RankExitError(first) : err));
      },
      kill: () => {
        endBeforeStart('SIGKILL');
        for (const p of procs.values()) p.kill();
      },
      close: async (graceMs: number) => {
        endBeforeStart(null);
        await Promise.all([...procs.values()].map((p) => p.close(graceMs)));
        return exited;
      },
    };
  }
}

/**
 * The gang of the i-th build meets on a socket of its own: every build's processes form a gang of
 * their own (rank r of build b talks only to the other ranks of build b), in the same directory.
 */
function buildRendezvous(s: RankStart, i: number): Pick<RankStart, 'rendezvous'> {
  if (s.rendezvous === undefined) return {};
  return { rendezvous: { ...s.rendezvous, address: s.rendezvous.address.replace(/\.sock$/, '') + `.${i}.sock` } };
}

/**
 * flock(LOCK_EX|LOCK_NB) on the worker's open file description of the card's lock, by flock(1)
 * on the inherited fd (Node has no flock): exit 0 locked, LOCK_BUSY_EXIT when another description
 * holds it. The lock stays on the description after flock(1) exits.
 */
function lockDescription(fd: number, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('flock', ['-n', '-E', String(LOCK_BUSY_EXIT), String(INHERITED_LOCK_FD)], { stdio: ['ignore', 'ignore', 'pipe', fd] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-500)));
    child.once('error', (err) => reject(new OrchError('CARD_LOCK_HANDOFF', `cannot run flock(1) to take the card lock ${path}: ${err.message}`, { cause: err })));
    child.once('close', (code) => {
      if (code === 0) resolve();
      else if (code === LOCK_BUSY_EXIT) reject(new OrchError('CARD_BUSY', `card lock ${path}: held by another process; one rank per card`));
      else reject(new OrchError('CARD_LOCK_HANDOFF', `flock(1) on the card lock ${path} exited ${code}: ${stderr.trim()}`));
    });
  });
}

/**
 * One resident `graphrt serve` of `binary` for a rank. `lock`: the card's lock handed down as an
 * open file description (`lockFd`, inherited as fd 3), else the process takes `--card-lock PATH`.
 */
function startProcess(binary: string, s: RankStart, lock?: { lockFd: number; flag: boolean }): RankHandle {
  const { args, env } = toNativeProcess(s.job, {
    rank: s.rank,
    world: s.world,
    backend: s.card.backend,
    uuid: s.card.uuid,
    lockPath: s.lockPath,
    ...(lock === undefined ? {} : { lockFd: { fd: INHERITED_LOCK_FD, flag: lock.flag } }),
    rendezvous: s.rendezvous,
  });
  const pdeath = hasSetpriv();
  if (!pdeath) s.log.warn('setpriv not found: ranks exit when their stdin closes, not on the worker death signal');
  const [file, argv] = pdeath ? ['setpriv', ['--pdeathsig', 'KILL', '--', binary, ...args]] : [binary, args];
  const child = spawn(file, argv, {
    detached: true,
    stdio: lock === undefined ? ['pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe', lock.lockFd],
    // graphrt's own knobs and NCCL's pass; the rest of the worker's environment does not (credentials)
    env: programEnv(env, process.env, GRAPHRT_INHERITS),
  }) as ChildProcessWithoutNullStreams;
  s.log.debug({ pid: child.pid, cmd: [binary, ...args].join(' ') }, 'rank started');
  child.stdin.on('error', () => {
    // EPIPE after the rank died: its exit is reported through `exited`
  });

  let lastErrorLine: string | null = null;
  const stderrTail: string[] = [];
  type Pending = { op: RankOp; timeoutMs: number; resolve: (l: RankLine) => void; reject: (e: Error) => void; timer?: NodeJS.Timeout };
  // The request graphrt answers now (queue[0]) and at most one written behind it: graphrt reads a
  // line only after the final line of the one before (PROTOCOL.md "Modes"), so the one behind
  // starts the moment the answer before it is written, without the worker's turnaround between
  // them. Lines are matched to queue[0] alone, by id and arm; the timeout of a request runs from
  // when it becomes queue[0] (the rep before it is not its time).
  const queue: Pending[] = [];
  // requests answered with an error line, each waiting for the exit that would make it fatal
  const erroring = new Set<Pending>();
  const rejectAll = (err: Error) => {
    for (const q of [...erroring, ...queue.splice(0)]) {
      clearTimeout(q.timer);
      q.reject(err);
    }
    erroring.clear();
  };
  const startClock = (p: Pending | undefined) => {
    if (p === undefined) return;
    p.timer = setTimeout(() => {
      if (queue[0] !== p) return;
      queue.shift();
      p.reject(new Error(`rank ${s.rank} on card ${s.card.id} did not answer ${p.op.op} ${p.op.id} (arm ${p.op.arm.name}) within ${p.timeoutMs} ms`));
      // the one written behind it would be answered only after it: it fails with it
      for (const q of queue.splice(0)) q.reject(new Error(`rank ${s.rank} on card ${s.card.id}: ${q.op.op} ${q.op.id} not answered: ${p.op.id}, written before it, timed out`));
    }, p.timeoutMs);
  };
  let exit: RankExit | null = null;
  let fault: string | null = null;
  let helloSeen = false;
  let resolveReady!: (l: Hello) => void;
  let rejectReady!: (e: Error) => void;
  const ready = new Promise<Hello>((res, rej) => {
    resolveReady = res;
    rejectReady = rej;
  });
  ready.catch(() => {});

  const kill = () => {
    if (exit || child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // the group is already gone
    }
  };
  // The rank is ended at once: its exit reports the fault (RankExit.fault), and the request in
  // flight (or the wait for hello) fails with it now.
  const breakProtocol = (why: string) => {
    if (fault !== null || exit) return;
    fault = why;
    const err = new RankProtocolError({ rank: s.rank, card: s.card.id, pid: child.pid ?? null }, why);
    rejectReady(err);
    rejectAll(err);
    kill();
  };

  const onLine = (raw: string) => {
    if (fault !== null || raw.trim() === '') return;
    let line: GraphrtLine;
    try {
      line = parseGraphrtLine(raw);
    } catch (err) {
      breakProtocol((err as Error).message);
      return;
    }
    if (line.type === 'error') lastErrorLine = `${line.code}: ${line.message}`;
    if (!helloSeen) {
      if (line.type === 'hello') {
        helloSeen = true;
        s.onLine(line, raw);
        resolveReady(line);
      } else if (line.type === 'error') {
        // a final error before hello (CARD_BUSY) is followed by the exit, which rejects `ready`
        s.onLine(line, raw);
      } else breakProtocol(`a "${line.type}" line before hello: ${quoteLine(raw)}`);
      return;
    }
    const p = queue[0] ?? null;
    // A line of another request (a repeated final line, a late answer) must never answer this one.
    const stray = line.type === 'hello' || (line.id !== undefined && (p === null || line.id !== p.op.id)) || (isFinal(line) && line.type !== 'error' && p === null);
    const wrongArm = p !== null && 'arm' in line && line.arm !== p.op.arm.name;
    if (stray || wrongArm) {
      const expected = p === null ? 'no request in flight' : `request ${p.op.id} (arm ${p.op.arm.name}) in flight`;
      const got = 'arm' in line ? `id ${line.id ?? 'none'}, arm ${line.arm}` : `id ${line.id ?? 'none'}`;
      breakProtocol(`a "${line.type}" line of ${got} with ${expected}: ${quoteLine(raw)}`);
      return;
    }
    s.onLine(line, raw);
    if (!isFinal(line) || !p) return;
    clearTimeout(p.timer);
    queue.shift();
    startClock(queue[0]);
    if (line.type === 'error') {
      // A fatal error (CUDA_ERROR...) is followed by the exit, which rejects with the exit code
      // and this line; a bad request is answered and serving goes on.
      erroring.add(p);
      p.timer = setTimeout(() => {
        if (erroring.delete(p)) p.resolve(line);
      }, ERROR_EXIT_WAIT_MS);
      return;
    }
    p.resolve(line);
  };
  readLines(child.stdout, MAX_RANK_LINE_BYTES, {
    onLine,
    onTooLong: (head) => breakProtocol(`a stdout line longer than ${MAX_RANK_LINE_LABEL}, starting: ${head}`),
  });
  const keepStderr = (l: string) => {
    if (l.trim() === '') return;
    stderrTail.push(l);
    if (stderrTail.length > STDERR_KEEP) stderrTail.shift();
    s.log.debug({ stderr: l }, 'rank stderr');
  };
  // stderr is for people: an overlong line is kept by its head, not a protocol fault
  readLines(child.stderr, MAX_RANK_LINE_BYTES, { onLine: keepStderr, onTooLong: (head) => keepStderr(`${head}… (longer than ${MAX_RANK_LINE_LABEL})`) });

  const exited = new Promise<RankExit>((resolve) => {
    const done = (code: number | null, signal: NodeJS.Signals | null) => {
      if (exit) return;
      exit = {
        rank: s.rank,
        card: s.card.id,
        pid: child.pid ?? null,
        code,
        signal,
        lastError: lastErrorLine ?? stderrLastError(stderrTail),
        fault,
      };
      const err = new RankExitError(exit);
      rejectReady(err);
      rejectAll(err);
      resolve(exit);
    };
    child.once('error', (e) => {
      lastErrorLine = `cannot start ${binary}: ${e.message}`;
      done(null, null);
    });
    child.once('close', done);
  });

  return {
    rank: s.rank,
    card: s.card,
    pids: () => (exit || child.pid === undefined ? [] : [child.pid]),
    ready,
    exited,
    kill,
    queues: () => true,
    request: (op: RankOp, timeoutMs: number) =>
      new Promise<RankLine>((resolve, reject) => {
        if (exit) return reject(new RankExitError(exit));
        if (fault !== null) return reject(new RankProtocolError({ rank: s.rank, card: s.card.id, pid: child.pid ?? null }, fault));
        if (queue.length >= 2) return reject(new Error(`rank ${s.rank}: ${queue[0]!.op.id} and ${queue[1]!.op.id} already in flight (one request at most behind the one answered now)`));
        const p: Pending = { op, timeoutMs, resolve, reject };
        queue.push(p);
        if (queue.length === 1) startClock(p);
        child.stdin.write(`${JSON.stringify(toNativeRequest(s.job, op.arm, { op: op.op, id: op.id }))}\n`);
      }),
    close: async (graceMs: number) => {
      child.stdin.end();
      const t = setTimeout(kill, graceMs);
      const e = await exited;
      clearTimeout(t);
      return e;
    },
  };
}

/** The last stderr line, preferring a JSON error line (PROTOCOL.md: the final error goes to stderr too). */
function stderrLastError(tail: string[]): string | null {
  for (let i = tail.length - 1; i >= 0; i--) {
    const l = tail[i] as string;
    try {
      const j = JSON.parse(l) as { type?: string; code?: string; message?: string };
      if (j.type === 'error') return `${j.code ?? 'ERROR'}: ${j.message ?? ''}`;
    } catch {
      // not JSON
    }
  }
  return tail.length > 0 ? (tail[tail.length - 1] as string).slice(0, 500) : null;
}
