/**
 * The embedded default (no REDIS_URL): one process tree runs one experiment end to end —
 * a private redis-server (temporary directory, free port, noeviction, no persistence), the
 * scheduler, and a local worker (in-process; its ranks are graphrt children that die with it),
 * on the local cards (graphrt's CPU backend where no GPU is visible). It submits, waits, writes
 * results/<id>/, prints the report and shuts everything down — also on Ctrl-C / SIGTERM, which
 * cancel the experiment first so the results say what was and was not measured (the redis-server
 * runs in a process group of its own, so the terminal's Ctrl-C does not kill it under the
 * cancel). A second Ctrl-C exits at once; a private Redis that dies anyway ends the run with an
 * error (run-interrupts.ts). The shutdown is bounded: a part that does not stop in time is left
 * to the process's exit.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { UserInputError } from '../../jobs/errors.ts';
import { newClusterSecret } from '../../jobs/grant.ts';
import { planExperiment } from '../../jobs/plan.ts';
import { cancelExperiment } from '../../orchestrator/experiment/cancel.ts';
import { waitForEnd } from '../../orchestrator/experiment/progress.ts';
import { runExperiment } from '../../orchestrator/experiment/run-experiment.ts';
import { failedOutputLines } from '../../orchestrator/report/failed-output-section.ts';
import type { FailOnSet } from '../../orchestrator/report/outcome-exit-code.ts';
import type { WrittenResults } from '../../orchestrator/results/write-results.ts';
import { Scheduler } from '../../orchestrator/scheduler/scheduler.ts';
import type { LoadedSpec } from '../../orchestrator/spec/load-spec.ts';
import { type ExperimentState, ExperimentStore } from '../../store/experiment-store.ts';
import { DEFAULT_PREFIX } from '../../store/keys.ts';
import { type RedisServerProcess, redisServerBinary, startRedisServer } from '../../store/redis-server-process.ts';
import { newSubmitToken } from '../../store/submit-token.ts';
import { makeNonDumpable, NODUMP_FIX } from '../../worker/non-dumpable.ts';
import { preflightGraphrt } from '../../worker/preflight/preflight.ts';
import { Worker } from '../../worker/worker.ts';
import { SIGNAL_EXIT_CODES } from '../exit-codes.ts';
import { jsonLine } from '../terminal/json-line.ts';
import { progressPrinter } from '../terminal/progress-printer.ts';
import { liveColumns, terminalMode } from '../terminal/terminal-mode.ts';
import { orchLog } from './log.ts';
import { checkRanksOverCores } from './ranks-over-cores.ts';
import { EndedBySignal, RunInterrupts } from './run-interrupts.ts';

export const DEFAULT_GRAPHRT = fileURLToPath(new URL('../../native/build/graphrt', import.meta.url));

export interface EmbeddedInput {
  loaded: LoadedSpec;
  watch: boolean;
  json: boolean;
  resultsRoot: string;
  graphrt?: string;
  /**
   * cpu cards the local worker offers where no GPU is visible (default: ORCH_CPU_CARDS, else one
   * per block up to the CPU count, at least the ranks a block needs): blocks are replicates that
   * compare arms only inside themselves, so they may run side by side.
   */
  cpuCards?: number;
  /** the outcomes that exit non-zero (default: orchestrator/report/outcome-exit-code.ts DEFAULT_FAIL_ON) */
  failOn?: FailOnSet;
}

export interface EmbeddedResult {
  id: string | null;
  state: ExperimentState | null;
  written: WrittenResults | null;
  /** the outcome's exit code under failOn (orchestrator/experiment/run-experiment.ts), 130/143 when interrupted */
  exitCode: number;
}

export async function runEmbedded(input: EmbeddedInput): Promise<EmbeddedResult> {
  const out = (s: string) => process.stdout.write(s);
  const note = (s: string) => process.stderr.write(`orch: ${s}\n`);
  const log = orchLog('embedded');
  const plan = planExperiment(input.loaded.spec, input.loaded.hash);
  const graphrt = input.graphrt ?? process.env.ORCH_GRAPHRT ?? DEFAULT_GRAPHRT;
  if (input.loaded.spec.workload.runtime === 'native' && !existsSync(graphrt)) {
    throw new UserInputError('GRAPHRT_MISSING', `graphrt is not built (${graphrt} does not exist)`, {
      hint: 'run `npm run build` (needs cmake and a C++ compiler: `sudo apt-get install -y cmake g++`)',
    });
  }
  redisServerBinary(); // a missing binary: the message with the install command, before anything starts
  // Preflight before anything starts: a spec that needs cuda refuses a CPU-only graphrt.
  if (input.loaded.spec.workload.runtime === 'native')
    await preflightGraphrt(graphrt, input.loaded.spec.workload.backend);
  const cpuCards =
    input.cpuCards ??
    (Number(process.env.ORCH_CPU_CARDS) || Math.max(plan.ranks, Math.min(plan.blocks.length, cpus().length)));

  const stack: (() => Promise<void>)[] = [];
  // Steps run in reverse order of start; one still running at the deadline is left to finish
  // (or not) on its own, and the later ones start anyway: the server's stop must not wait on a
  // worker that waits on a dead Redis.
  const shutdown = async (limitMs: number) => {
    const deadline = Date.now() + limitMs;
    for (const f of stack.reverse()) {
      const step = f().catch((err: unknown) => log.warn({ err }, 'embedded: shutdown step failed'));
      const left = deadline - Date.now();
      let timer: NodeJS.Timeout | undefined;
      if (left > 0) await Promise.race([step, new Promise((r) => (timer = setTimeout(r, left)))]);
      clearTimeout(timer);
    }
    stack.length = 0;
  };
  let id: string | null = null;
  let redis: Redis | null = null;
  const interrupts = new RunInterrupts(note, () => id ?? 'the experiment');
  const guard = <T>(p: Promise<T>) => interrupts.guard(p);
  let stoppingServer = false;

  try {
    const server: RedisServerProcess = await startRedisServer();
    interrupts.watch(server, () => stoppingServer);
    stack.push(() => {
      stoppingServer = true;
      return server.stop();
    });
    const prefix = DEFAULT_PREFIX;
    const lockDir = mkdtempSync(join(tmpdir(), 'orch-embedded-locks-'));
    stack.push(async () => rmSync(lockDir, { recursive: true, force: true }));
    redis = new Redis(server.url, { maxRetriesPerRequest: null });
    const conn = redis;
    stack.push(async () => conn.disconnect());

    // one secret per run, held only by this process: nothing written to the private Redis runs unsigned
    const secret = newClusterSecret();
    // and one submit token, so the private scheduler accepts this process's submission alone
    const submitToken = newSubmitToken();
    // The private Redis's password and the run's secret are in this process's heap from here on,
    // and the worker below starts the spec's programs as this user: non-dumpable (worker/non-dumpable.ts),
    // so none of them reads them through /proc/<pid>/mem or environ, as for `orch worker`.
    const dumpable = makeNonDumpable();
    if (dumpable !== null && input.loaded.spec.workload.runtime === 'command')
      log.warn(
        { reason: dumpable },
        `this process stays dumpable: the spec's programs may read its memory (its private Redis's password) through /proc/${process.pid}/mem; ${NODUMP_FIX}`,
      );
    // the spec is the user's own, run as the user: the embedded worker runs command workloads
    const worker = new Worker({
      redisUrl: server.url,
      prefix,
      graphrt,
      cpuCards,
      lockDir,
      secret,
      allowCommand: true,
      privateRedis: true,
      log: log.child({ part: 'worker' }),
    });
    stack.push(() => worker.stop());
    await guard(worker.start());
    const oversubscribed = checkRanksOverCores({
      file: input.loaded.file,
      ranks: plan.ranks,
      cards: worker.cards,
      cores: cpus().length,
      explicitCpuCards: process.env.ORCH_CPU_CARDS,
    });
    if (oversubscribed !== null) note(oversubscribed);
    const scheduler = new Scheduler({
      url: server.url,
      prefix,
      secret,
      submitToken,
      log: log.child({ part: 'scheduler' }),
    });
    scheduler.start();
    stack.push(() => scheduler.stop());

    if (interrupts.interrupted)
      return { id: null, state: null, written: null, exitCode: signalExit(interrupts.interrupted) };
    const outcome = await guard(
      runExperiment({
        redis,
        prefix,
        loaded: input.loaded,
        submitToken,
        // the local worker's cards are all there will ever be: a spec none of them can run
        // (workload.requires) is refused now, not left waiting until the user interrupts
        noWait: true,
        resultsRoot: input.resultsRoot,
        ...(input.failOn ? { failOn: input.failOn } : {}),
        wait: {
          signal: interrupts.abort.signal,
          ...(input.watch
            ? {
                onProgress: progressPrinter(out, terminalMode(process.stdout), {
                  columns: liveColumns(process.stdout),
                }),
              }
            : {}),
        },
        onSubmitted: (sub) => {
          id = sub.id;
          if (input.json) return;
          out(
            `experiment ${sub.id} (spec ${input.loaded.hash.slice(0, 12)}): ${plan.arms.length} arms × ${plan.reps} reps × ${plan.blocks.length} blocks on ${worker.cards.map((c) => c.id).join(', ')}\n`,
          );
        },
        // an interrupted run is cancelled and settles, so its results say what was and was not measured
        settle: async (sid, state) => {
          const interrupted = interrupts.interrupted;
          if (!interrupted) return state;
          await cancelExperiment(conn, prefix, sid, `interrupted (${interrupted})`);
          const exp = (await new ExperimentStore(conn, prefix).get(sid))!;
          return waitForEnd(conn, prefix, exp, { signal: AbortSignal.timeout(10_000) });
        },
      }),
    );
    const { state, written } = outcome;
    if (input.json) {
      out(
        jsonLine({
          experiment: outcome.id,
          state,
          dir: written.dir,
          accounting: written.accounting,
          verdict: written.analysis.verdict,
        }),
      );
    } else {
      out(`${written.report}\nresults: ${written.dir}\n`);
    }
    const interrupted = interrupts.interrupted;
    if (state !== 'done' && !interrupted) {
      const reason = (await guard(new ExperimentStore(redis, prefix).get(outcome.id)))?.reason;
      note(`experiment ${outcome.id} ended ${state}${reason ? `: ${reason}` : ''}`);
      for (const l of failedOutputLines(written.analysis)) process.stderr.write(`${l}\n`);
    }
    return { id, state, written, exitCode: interrupted ? signalExit(interrupted) : outcome.exitCode };
  } catch (err) {
    if (err instanceof EndedBySignal) return { id, state: null, written: null, exitCode: signalExit(err.signal) };
    throw err;
  } finally {
    // A second signal during the shutdown cuts it short too; what is left dies with the process.
    const limitMs = interrupts.endedBy ? 1000 : 30_000;
    await interrupts.guard(shutdown(limitMs)).catch(() => undefined);
    interrupts.dispose();
  }
}

function signalExit(sig: NodeJS.Signals): number {
  return sig === 'SIGINT' ? SIGNAL_EXIT_CODES.SIGINT : SIGNAL_EXIT_CODES.SIGTERM;
}
