/**
 * GraphrtRunner: one resident `graphrt serve` per rank (worker/rank-runner.ts has the seam).
 *
 * The host guard and fate-sharing, per rank process:
 * - `--card-lock <lockdir>/<card>.lock`: graphrt holds the card's flock for its whole life, so a
 *   second process on the card cannot start (CARD_BUSY, exit 4) whatever Redis says;
 * - `detached: true`: it leads its own process group, and kill() SIGKILLs the group;
 * - stdin is a pipe from this worker: graphrt exits when it closes (the worker died or the block
 *   ended); and, where util-linux `setpriv` exists, PR_SET_PDEATHSIG=SIGKILL, so a worker killed
 *   with -9 takes its ranks with it even in the middle of a long rep.
 */
import { spawn, spawnSync } from 'node:child_process';
import { isFinal, parseGraphrtLine, type GraphrtLine, type Hello } from '../jobs/graphrt-protocol.ts';
import { MAX_RANK_LINE_BYTES, MAX_RANK_LINE_LABEL, quoteLine } from '../jobs/line-limit.ts';
import { toNativeProcess, toNativeRequest } from '../jobs/native-args.ts';
import { readLines } from './line-reader.ts';
import { RankExitError, RankProtocolError, type RankExit, type RankHandle, type RankLine, type RankOp, type RankRunner, type RankStart } from './rank-runner.ts';

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

export class GraphrtRunner implements RankRunner {
  constructor(private readonly binary: string) {}

  start(s: RankStart): RankHandle {
    const { args, env } = toNativeProcess(s.job, {
      rank: s.rank,
      world: s.world,
      backend: s.card.backend,
      uuid: s.card.uuid,
      lockPath: s.lockPath,
      rendezvous: s.rendezvous,
    });
    const pdeath = hasSetpriv();
    if (!pdeath) s.log.warn('setpriv not found: ranks exit when their stdin closes, not on the worker death signal');
    const [file, argv] = pdeath ? ['setpriv', ['--pdeathsig', 'KILL', '--', this.binary, ...args]] : [this.binary, args];
    const child = spawn(file, argv, {
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    s.log.debug({ pid: child.pid, cmd: [this.binary, ...args].join(' ') }, 'rank started');
    child.stdin.on('error', () => {
      // EPIPE after the rank died: its exit is reported through `exited`
    });

    let lastErrorLine: string | null = null;
    const stderrTail: string[] = [];
    let pending: { op: RankOp; resolve: (l: RankLine) => void; reject: (e: Error) => void; timer?: NodeJS.Timeout } | null = null;
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
      if (pending) {
        clearTimeout(pending.timer);
        pending.reject(err);
        pending = null;
      }
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
      const p = pending;
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
      if (line.type === 'error') {
        // A fatal error (CUDA_ERROR...) is followed by the exit, which rejects with the exit code
        // and this line; a bad request is answered and serving goes on.
        p.timer = setTimeout(() => {
          if (pending !== p) return;
          pending = null;
          p.resolve(line);
        }, ERROR_EXIT_WAIT_MS);
        return;
      }
      pending = null;
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
        if (pending) {
          clearTimeout(pending.timer);
          pending.reject(err);
          pending = null;
        }
        resolve(exit);
      };
      child.once('error', (e) => {
        lastErrorLine = `cannot start ${this.binary}: ${e.message}`;
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
      request: (op: RankOp, timeoutMs: number) =>
        new Promise<RankLine>((resolve, reject) => {
          if (exit) return reject(new RankExitError(exit));
          if (fault !== null) return reject(new RankProtocolError({ rank: s.rank, card: s.card.id, pid: child.pid ?? null }, fault));
          if (pending) return reject(new Error(`rank ${s.rank}: a request is already in flight`));
          pending = { op, resolve, reject };
          pending.timer = setTimeout(() => {
            if (!pending) return;
            pending = null;
            reject(new Error(`rank ${s.rank} on card ${s.card.id} did not answer ${op.op} ${op.id} (arm ${op.arm.name}) within ${timeoutMs} ms`));
          }, timeoutMs);
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
