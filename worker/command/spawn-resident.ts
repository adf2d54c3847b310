/**
 * Starting a resident command rank's program (ranklib/PROTOCOL.md): its environment — minimal
 * (program-env.ts: never a credential), the spec's run.env, the protocol's ORCH_* variables, the
 * card or, in the host phase, no device at all (ORCH_HOST_PHASE=1, CUDA_VISIBLE_DEVICES empty until
 * `open` names the card) — its process group tethered to the worker (spawnRank), and the rank
 * protocol over its pipes. One function for the two who start a program: the rank that holds the
 * card (resident-command-rank.ts, inside the lease or for the next block's host phase) and the
 * build phase, which starts the first block's ranks before any card is leased (prepare-first.ts).
 */
import type { Logger } from 'pino';
import type { Card } from '../../jobs/card.ts';
import {
  ORCH_RANK_VERSION,
  type OrchRankLine,
  orchRankOpen,
  parseOrchRankLine,
} from '../../jobs/orch-rank-protocol.ts';
import { HOST_PHASE } from '../../jobs/rank-protocol-constants.ts';
import { spawnRank } from '../rank-process.ts';
import { type RankLineSchema, RankProtocol } from '../rank-protocol.ts';
import type { RankOp } from '../rank-runner.ts';
import { type RunAs, runAsEnv } from '../run-as.ts';
import type { CommandWorkload } from './command-builds.ts';
import { type CommandGang, torchrunEnv } from './command-gang.ts';
import { injectionEnv } from './launch-counter.ts';
import { programEnv } from './program-env.ts';
import type { RankCaches } from './rank-caches.ts';
import { commandCwd } from './run-command-rep.ts';

/** run.hello_timeout_s's default: an `import torch`, CUDA's start and a model build come first. */
export const DEFAULT_HELLO_TIMEOUT_S = 120;
/** The exit record quotes this many of the program's last stderr lines (a Python traceback's tail). */
const STDERR_LINES_IN_EXIT = 5;

export const HELLO_HINT = `a resident command rank speaks the orch-rank protocol (ranklib/PROTOCOL.md) on stdout: serve the program through orch_rank (Python, ranklib/python) or orch_rank.h (C++, ranklib/cpp); its setup runs before hello, so raise workload.run.hello_timeout_s if it takes longer`;

export interface ResidentProgram {
  rank: number;
  world: number;
  /** the card it runs on; in the host phase only its backend counts (which injection), the device stays hidden */
  card: Card;
  commandGang?: CommandGang;
  workload: CommandWorkload;
  artifactDir: string | null;
  /** the build's compiler caches on this host (rank-caches.ts) */
  caches: RankCaches | null;
  traceProbe: boolean;
  injectLib: string | null;
  runAs: RunAs | null;
  log: Logger;
  /** CUDA_VISIBLE_DEVICES inside the lease (command-gang.ts visibleDevices); null: the host phase */
  devices: string | null;
}

/** Where the program's lines go and how requests are written: the rank's, or a prepared slot's until adopted. */
export interface ResidentHooks {
  onLine: (line: OrchRankLine, raw: string) => void;
  onStderr: (line: string) => void;
  request: (op: RankOp) => string;
  onExchange?: (line: OrchRankLine) => void;
  helloHint?: () => string;
}

/** The program, started now: inside the lease (`p.devices` set) or in the host phase (`p.devices` null). */
export function spawnResidentProgram(p: ResidentProgram, hooks: ResidentHooks): RankProtocol<OrchRankLine> {
  const run = p.workload.run;
  const hostPhase = p.devices === null;
  const base = programEnv({
    ...(p.caches?.env ?? {}),
    ...(run.env ?? {}),
    ORCH_RANK_PROTOCOL: String(ORCH_RANK_VERSION),
    ORCH_PARAMS: JSON.stringify(p.workload.params ?? {}),
    ORCH_RANK: String(p.rank),
    ORCH_WORLD: String(p.world),
    ...(p.artifactDir === null ? {} : { ORCH_ARTIFACTS: p.artifactDir }),
    // the host phase: no device visible until `open` names the card
    CUDA_VISIBLE_DEVICES: p.devices ?? '',
    ...(hostPhase ? { [HOST_PHASE.env]: '1' } : {}),
    ...(p.commandGang === undefined ? {} : torchrunEnv(p.commandGang, p.rank, p.world, run)),
  });
  const env = {
    ...base,
    ...runAsEnv(p.runAs),
    ...injectionEnv({
      backend: p.card.backend,
      counts: run.launch_counts === true,
      traceProbe: p.traceProbe,
      lib: p.injectLib,
      programEnv: base,
    }),
  };
  const { child, endGroup } = spawnRank(run.cmd, {
    cwd: commandCwd(run.cwd, p.artifactDir, undefined, p.runAs),
    env,
    warn: (msg) => p.log.warn(msg),
    runAs: p.runAs,
  });
  p.log.debug({ pid: child.pid, cmd: run.cmd, host_phase: hostPhase }, 'resident rank started');
  // through `hooks` at each call: a prepared process's hooks are rebound to the rank that adopts it
  const schema: RankLineSchema<OrchRankLine> = { parse: parseOrchRankLine, request: (op) => hooks.request(op) };
  return new RankProtocol(child, schema, {
    rank: p.rank,
    card: p.card,
    log: p.log,
    program: run.cmd,
    onLine: (line, raw) => hooks.onLine(line, raw),
    onStderr: (line) => hooks.onStderr(line),
    ...(hostPhase ? { hostPhase: { open: orchRankOpen } } : {}),
    helloTimeoutMs: (run.hello_timeout_s ?? DEFAULT_HELLO_TIMEOUT_S) * 1000,
    helloHint: () => hooks.helloHint?.() ?? HELLO_HINT,
    onExchange: (line) => {
      // a process in the host phase says nothing but `prepared` before its open (ranklib/PROTOCOL.md)
      if (hooks.onExchange === undefined) throw new Error('an exchange line from a rank process no rank adopted yet');
      hooks.onExchange(line);
    },
    stderrLinesInExit: STDERR_LINES_IN_EXIT,
    // graphrt's exit codes (native/PROTOCOL.md) are not the user's: a death mid-block is retried
    exitCodesKnown: false,
    onExit: endGroup,
  });
}
