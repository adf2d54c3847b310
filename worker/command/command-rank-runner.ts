/**
 * CommandRankRunner: the rank-runner seam (worker/rank-runner.ts) for `runtime: command`
 * workloads — the user's own binary: `run.mode: resident`, one program per rank speaking the
 * rank protocol (resident-command-rank.ts); else one process per rep (run-command-rep.ts).
 *
 * Per rep: `ready` ensures the builds and runs the preflight (command-builds.ts) before the
 * block's first rep, and resolves with a hello-shaped
 * line `{ type: 'hello', backend: 'command', artifacts, build }`. Each `rep` op spawns one process
 * under the card's flock, fate-shared with this worker, and answers a protocol-shaped `rep`
 * line (or an `error` line whose message names the spec path, e.g. METRIC_NO_LINES). Every
 * output line of the user's process reaches the event stream as `{ type: 'output', stream, line }`.
 */

import type { BlockJob } from '../../jobs/block-job.ts';
import { type CommandHello, type CommandLine, type CommandOutput, CommandRepSchema } from '../../jobs/command-line.ts';
import { OrchError } from '../../jobs/errors.ts';
import { OutputTail, type RankOutput } from '../../jobs/rank-output-tail.ts';
import { describeIssues } from '../../jobs/schema-issues.ts';
import type { BuildCache, EnsuredBuild } from '../builds/build-cache.ts';
import { ensureCommitBuild } from '../builds/commit-build.ts';
import type { RankExit, RankHandle, RankLine, RankOp, RankRunner, RankStart } from '../rank-runner.ts';
import type { RunAs } from '../run-as.ts';
import { type CommandWorkload, type EnsureBuild, prepareCommandBuilds } from './command-builds.ts';
import { torchrunEnv, visibleDevices } from './command-gang.ts';
import { PerRepLaunches } from './per-rep-launches.ts';
import { PreparedSlots } from './prepared-slots.ts';
import { ResidentCommandRank } from './resident-command-rank.ts';
import { type CommandWorkloadInput, runCommandRep } from './run-command-rep.ts';

export interface CommandRankRunnerOptions {
  cache: BuildCache;
  /** Preflight floor of free disk on the build dir, in GB, when the job does not carry spec.min_free_disk_gb. */
  minFreeDiskGb?: number;
  /** orch's CUPTI injection library on this host (launch-counter.ts), for resident ranks on cuda cards; null: none */
  injectLib?: string | null;
  /** the worker's graphrt, whose chain measures a trace probe's graph-node floor (chain-floor.ts); null: none */
  graphrt?: string | null;
  /** the user programs run as (worker/run-as.ts); null: the worker's own */
  runAs?: RunAs | null;
}

export class CommandRankRunner implements RankRunner {
  /** One build per workload in flight in this worker, shared by the ranks of a gang. */
  private readonly inFlight = new Map<string, Promise<EnsuredBuild>>();
  /** resident ranks started in the host phase for the next block, one per card */
  readonly prepared = new PreparedSlots();

  constructor(private readonly opts: CommandRankRunnerOptions) {}

  /**
   * Only the request that starts a build reports its events (`onEvent`): the ranks of a gang
   * that join it would draw the same slice again.
   */
  private ensure(
    job: BlockJob,
    workload: CommandWorkload,
    onEvent: RankStart['onBuild'],
    name?: string,
  ): Promise<EnsuredBuild> {
    const build = workload.build!;
    const commit = name === undefined ? undefined : job.builds!.builds[name]!;
    const id = JSON.stringify([build, commit?.commit ?? null]);
    let p = this.inFlight.get(id);
    if (!p) {
      p = (
        commit === undefined || name === undefined
          ? this.opts.cache.ensure({ build, experiment: job.experiment, ...(onEvent ? { onEvent } : {}) })
          : ensureCommitBuild(this.opts.cache, {
              name,
              ref: commit.ref,
              commit: commit.commit,
              repo: job.builds!.repo,
              build,
              experiment: job.experiment,
              ...(onEvent ? { onEvent } : {}),
            })
      ).finally(() => this.inFlight.delete(id));
      this.inFlight.set(id, p);
    }
    return p;
  }

  start(s: RankStart): RankHandle {
    const job = s.job;
    if (job.workload.runtime !== 'command')
      throw new OrchError(
        'RANK_REQUEST_INVALID',
        `block ${job.block}: CommandRankRunner got a ${job.workload.runtime} workload`,
      );
    const workload = job.workload;
    const ensure: EnsureBuild = (onEvent, name) => this.ensure(job, workload, onEvent, name);
    if (workload.run.mode === 'resident')
      return new ResidentCommandRank(
        s,
        workload,
        {
          buildRoot: this.opts.cache.root,
          minFreeDiskGb: this.opts.minFreeDiskGb,
          injectLib: this.opts.injectLib ?? null,
          graphrt: this.opts.graphrt ?? null,
          runAs: this.opts.runAs ?? null,
          slots: this.prepared,
        },
        ensure,
      );
    return new CommandRank(s, workload, this.opts, ensure);
  }
}

/** One rank of a command workload: its builds and preflight (`ready`), then one process per rep. */
class CommandRank implements RankHandle {
  readonly rank: number;
  readonly card: RankStart['card'];
  readonly ready: Promise<CommandHello>;
  readonly exited: Promise<RankExit>;
  private readonly abort = new AbortController();
  /** the pid of the rep's process while one runs */
  private current: number | null = null;
  private inflight: Promise<unknown> = Promise.resolve();
  private resolveExited!: (e: RankExit) => void;
  private ended = false;
  private artifactDir: string | null = null;
  /** Builds as arms: the artifact dir of each build the block's arms name. */
  private readonly buildDirs = new Map<string, string>();
  private readonly env: Record<string, string>;
  private readonly wl: CommandWorkloadInput;
  /** the last lines of the latest rep's process: a failure's record says why that process failed */
  private readonly tail = new OutputTail();

  constructor(
    private readonly s: RankStart,
    private readonly workload: CommandWorkload,
    private readonly opts: CommandRankRunnerOptions,
    private readonly ensure: EnsureBuild,
  ) {
    this.rank = s.rank;
    this.card = s.card;
    const metric = workload.metric_source;
    // compile-spec requires it of a per_rep workload: a payload without one was built wrong upstream
    if (metric === undefined)
      throw new OrchError(
        'BLOCK_PAYLOAD_INVALID',
        `block ${s.job.block}: a per_rep command workload without workload.metric_source`,
      );
    this.wl = { ...workload, metric_source: metric, warmup: s.job.warmup, steps: s.job.steps };
    // each rep's processes of a gang meet as torchrun's would (command-gang.ts); no exchange: a per_rep program has no protocol stream
    this.env = {
      ORCH_RANK: String(s.rank),
      ORCH_WORLD: String(s.world),
      ...(s.card.backend === 'cuda'
        ? { CUDA_VISIBLE_DEVICES: visibleDevices(s.card, s.commandGang, workload.run.launcher) }
        : {}),
      ...(s.commandGang === undefined ? {} : torchrunEnv(s.commandGang, s.rank, s.world, workload.run)),
    };
    this.exited = new Promise<RankExit>((r) => (this.resolveExited = r));
    this.ready = this.hello();
    this.ready.catch(() => {});
  }

  pids(): number[] {
    return this.current === null ? [] : [this.current];
  }

  output(): RankOutput {
    return this.tail.output();
  }

  kill(): void {
    this.abort.abort(new Error('killed'));
    void this.inflight.finally(() => this.end('SIGKILL'));
  }

  async close(): Promise<RankExit> {
    await this.inflight;
    this.end(null);
    return this.exited;
  }

  private end(signal: string | null): void {
    if (this.ended) return;
    this.ended = true;
    this.resolveExited({
      rank: this.s.rank,
      card: this.s.card.id,
      pid: this.current,
      code: signal ? null : 0,
      signal,
      lastError: null,
      fault: null,
    });
  }

  private async hello(): Promise<CommandHello> {
    const prepared = await prepareCommandBuilds(this.s, this.workload, this.ensure, {
      buildRoot: this.opts.cache.root,
      minFreeDiskGb: this.opts.minFreeDiskGb,
    });
    this.artifactDir = prepared.artifactDir;
    for (const [name, dir] of prepared.buildDirs) this.buildDirs.set(name, dir);
    const hello: CommandHello = {
      v: 1,
      type: 'hello',
      backend: 'command',
      pid: process.pid,
      ...prepared.hello,
      final: true,
    };
    this.s.onLine(hello, JSON.stringify(hello));
    return hello;
  }

  private answer(line: CommandLine): RankLine {
    this.s.onLine(line, JSON.stringify(line));
    return line;
  }

  private fail(op: RankOp, code: string, message: string): RankLine {
    return this.answer({ v: 1, type: 'error', id: op.id, code, message, final: true });
  }

  async request(op: RankOp, timeoutMs: number): Promise<RankLine> {
    if (op.op !== 'rep') {
      return this.fail(
        op,
        'UNSUPPORTED',
        `op ${op.op}: a command workload has no ${op.op} gate (it is a graphrt gate); set gates.identity: false`,
      );
    }
    const { job } = this.s;
    const timer = setTimeout(() => this.abort.abort(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs);
    const counting =
      this.workload.run.launch_counts === true
        ? new PerRepLaunches({
            backend: this.s.card.backend,
            lib: this.opts.injectLib ?? null,
            programEnv: this.workload.run.env ?? {},
            stepRange: this.workload.run.launch_counts_step_range ?? null,
          })
        : null;
    this.tail.clear();
    try {
      const running = runCommandRep({
        workload: this.wl,
        arm: op.arm,
        artifactDir: op.arm.build === undefined ? this.artifactDir : (this.buildDirs.get(op.arm.build) ?? null),
        cardLock: this.s.lockPath,
        env: { ...this.env, ...(counting?.env ?? {}) },
        signal: this.abort.signal,
        runAs: this.opts.runAs ?? null,
        onStart: (pid) => (this.current = pid),
        onLine: (stream, line) => {
          this.tail.push(stream, line);
          const out: CommandOutput = { v: 1, type: 'output', id: op.id, stream, line };
          this.s.onLine(out, JSON.stringify(out));
        },
      });
      this.inflight = running.catch(() => {});
      const r = await running;
      // The metric values become a measurement only through the schema: a NaN or an
      // infinity the metric source let through is refused, not committed.
      const rep = CommandRepSchema.safeParse({
        v: 1,
        type: 'rep',
        id: op.id,
        arm: op.arm.name,
        workload: 'command',
        backend: 'command',
        mode: 'eager',
        warmup: job.warmup,
        steps: job.steps,
        step_ms: r.step_ms,
        step_index: r.steps,
        excluded: r.excluded,
        wall_ms: r.wall_ms,
        ...(counting === null ? {} : { launches: counting.read(r.metric_lines, r.excluded) }),
        final: true,
      });
      if (!rep.success)
        return this.fail(
          op,
          'METRIC_NOT_A_NUMBER',
          `workload.metric_source: the measured values of arm "${op.arm.name}" are not finite numbers: ${describeIssues(rep.error, 'rep')}`,
        );
      return this.answer(rep.data);
    } catch (err) {
      const e = err as { code?: string; message: string };
      return this.fail(op, e.code ?? 'INTERNAL', e.message);
    } finally {
      clearTimeout(timer);
      counting?.discard();
      this.current = null;
    }
  }
}

/** Picks the runner by the job's workload runtime: graphrt for native, the user's binary for command. */
export function runnerByRuntime(runners: { native: RankRunner; command: RankRunner }): RankRunner {
  return { start: (s) => runners[s.job.workload.runtime].start(s) };
}
