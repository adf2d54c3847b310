/**
 * The card's graph-node floor for a trace probe, measured where the program will run: graphrt's
 * chain (native/PROTOCOL.md "Workloads"), one `graphrt run` of a graph rep per CHAIN_REPS, on the
 * card's lock the worker already holds (the locked description inherited as fd 3), before the
 * resident program starts — never beside it, so neither disturbs the other. What it measured (or
 * why nothing) goes on the rank's hello and into the probe record; the floor itself is computed
 * from the reps by orchestrator/stats/graph-node-floor.ts. On a cuda card one more rep runs, eager,
 * under orch's injection library in trace mode, for the chain's busy time per kernel
 * (`kernel_busy_ns`): a user's traced busy time (its eager arm's) already holds each kernel's, so
 * the estimate adds per node only what the floor holds beyond it. Eager, as the user's busy is
 * measured: traced in a graph, the chain's kernels' intervals covered 0.951 µs of each 0.963 µs
 * node on the H200 (bench/h200/runs/2026-12-04c/truth2-graph-busy.txt), CUPTI's interval of a graph
 * node reaching over the gap before it, so nothing was left to split off.
 */
import { spawn } from 'node:child_process';
import type { ChainFloorRep, ChainFloorRun } from '../../jobs/chain-floor-run.ts';
import { type GraphrtLine, parseGraphrtLine } from '../../jobs/graphrt-protocol.ts';
import { MAX_RANK_LINE_BYTES } from '../../jobs/line-limit.ts';
import { messageOf } from '../../jobs/message-of.ts';
import { toChainFloorRun } from '../../jobs/native-args.ts';
import { INJECTION_VARIABLE } from '../../jobs/spec-schema/command-workload.ts';
import { fateShared, INHERITED_LOCK_FD } from '../rank-process.ts';
import { TRACE_VARIABLE } from './launch-counter.ts';
import { programEnv } from './program-env.ts';

/** Kernels per chain step: enough nodes that a step's time is the nodes' and not the launch's. */
const CHAIN_KERNELS = 256;
/*
 * The chain's buffer is graphrt's default, 256 elements: 4 blocks of 64 threads a kernel. A chain that
 * spans the card (32768 elements, 512 blocks) was tried for the estimate on the H200 and gave none:
 * traced eager, its kernels kept the card busy 1.25 µs each, more than its 1.20 µs graph node
 * (bench/h200/runs/2026-12-04c/truth2-wide-chain.txt). The 4-block chain leaves 0.13 µs a node
 * beyond its kernels' busy time, where the graph steps of three programs paid 0.46-0.48 µs a node
 * beyond theirs (truth2-eager-busy.txt): the report says so where the estimate falls short. A chain
 * of program-like kernels would not close it: graphrt's decode workload (24 layers, 291 distinct
 * kernels doing a decode step's work) left 0.09-0.10 µs a node on the H200, the chain 0.15, the
 * programs 0.44-0.49 (bench/h200/runs/2026-12-05/node-cost.txt), so what the programs' graphs pay
 * is in how they are built or launched, not in their kernels.
 */
const CHAIN_WARMUP = 4;
const CHAIN_STEPS = 32;
/** Graph reps, each its own process (a fresh capture): the floor is their median. */
export const CHAIN_REPS = 3;
/** One chain rep's wall-clock bound (a CPU emulation of 256 nodes × 36 steps takes milliseconds). */
const CHAIN_TIMEOUT_MS = 60_000;

export interface ChainFloorOptions {
  /** the worker's graphrt binary; null: none on this host */
  graphrt: string | null;
  backend: 'cpu' | 'cuda';
  uuid: string;
  /** the card's locked description, handed to graphrt as fd 3 */
  lockFd: number;
  /** orch's injection library on this worker (launch-counter.ts injectLibPath); null: none */
  injectLib: string | null;
  warn: (msg: string) => void;
}

/** The chain's reps on the card, or why there are none: a failure is said, never a floor made up. */
export async function measureChainFloor(o: ChainFloorOptions): Promise<ChainFloorRun> {
  const graphrt = o.graphrt;
  if (graphrt === null)
    return {
      source: 'none',
      reason:
        "no graphrt on this worker: graphrt's chain measures the graph-node floor (build it: node scripts/build-native.mjs)",
    };
  const reps: ChainFloorRep[] = [];
  let device = '';
  let backend: 'cpu' | 'cuda' = o.backend;
  for (let i = 0; i < CHAIN_REPS; i++) {
    const run = await chainRep({ ...o, graphrt }, 'graph', {});
    if ('reason' in run) return { source: 'none', reason: run.reason };
    reps.push(run.rep);
    device = run.device;
    backend = run.backend;
  }
  const kernel = await tracedKernel({ ...o, graphrt }, backend);
  return { source: 'graphrt-chain', backend, device, kernels: CHAIN_KERNELS, reps, kernel };
}

/** The chain's busy time per kernel from one traced rep, or why there is none (never a number made up). */
async function tracedKernel(
  o: ChainFloorOptions & { graphrt: string },
  backend: 'cpu' | 'cuda',
): Promise<{ ns: number } | { reason: string }> {
  if (backend !== 'cuda') return { reason: `graphrt's ${backend} backend: no kernels to trace` };
  if (o.injectLib === null)
    return { reason: "orch's injection library is not built on this worker (liborch_inject.so beside its graphrt)" };
  const run = await chainRep(o, 'eager', { [INJECTION_VARIABLE]: o.injectLib, [TRACE_VARIABLE]: '1' });
  if ('reason' in run) return { reason: `the traced chain rep: ${run.reason}` };
  if (run.kernelBusyNs === undefined || run.kernelBusyNs <= 0)
    return {
      reason: 'the traced chain rep carried no kernel_busy_ns: the injection library did not trace its kernels',
    };
  return { ns: run.kernelBusyNs };
}

type RepOrReason =
  | { rep: ChainFloorRep; device: string; backend: 'cpu' | 'cuda'; kernelBusyNs?: number }
  | { reason: string };

function chainRep(
  o: ChainFloorOptions & { graphrt: string },
  mode: 'graph' | 'eager',
  traceEnv: Record<string, string>,
): Promise<RepOrReason> {
  const { args, env } = toChainFloorRun({
    mode,
    backend: o.backend,
    uuid: o.uuid,
    lockFd: INHERITED_LOCK_FD,
    kernels: CHAIN_KERNELS,
    warmup: CHAIN_WARMUP,
    steps: CHAIN_STEPS,
  });
  const [file, argv] = fateShared(o.graphrt, args, o.warn);
  return new Promise((resolve) => {
    // the minimal environment every program orch starts gets (never a credential)
    const child = spawn(file, argv, {
      env: programEnv({ ...env, ...traceEnv }),
      stdio: ['ignore', 'pipe', 'pipe', o.lockFd],
    });
    let stdout = '';
    let stderr = '';
    let over = false;
    const take = (into: 'out' | 'err') => (b: Buffer) => {
      if (stdout.length + stderr.length > 4 * MAX_RANK_LINE_BYTES) {
        over = true;
        child.kill('SIGKILL');
        return;
      }
      if (into === 'out') stdout += b.toString('utf8');
      else stderr += b.toString('utf8');
    };
    child.stdout?.on('data', take('out'));
    child.stderr?.on('data', take('err'));
    const timer = setTimeout(() => child.kill('SIGKILL'), CHAIN_TIMEOUT_MS);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ reason: `graphrt's chain did not start: ${err.message}` });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const ended =
        code === 0
          ? null
          : new Error(
              over
                ? `it printed more than ${4 * MAX_RANK_LINE_BYTES} bytes`
                : signal !== null
                  ? `killed by ${signal} (over ${CHAIN_TIMEOUT_MS} ms?)`
                  : `exit ${code}`,
            );
      resolve(readChainRep(stdout, stderr, ended, mode));
    });
  });
}

/** The hello and the rep of one `graphrt run` in `mode`, or why the rep gives no floor. */
export function readChainRep(
  stdout: string,
  stderr: string,
  err: Error | null,
  mode: 'graph' | 'eager' = 'graph',
): RepOrReason {
  let device = '';
  let backend: 'cpu' | 'cuda' | null = null;
  for (const raw of stdout.split('\n').filter((l) => l.trim() !== '')) {
    let line: GraphrtLine;
    try {
      line = parseGraphrtLine(raw);
    } catch (e) {
      return { reason: `graphrt's chain printed a line this checkout does not read: ${messageOf(e)}` };
    }
    if (line.type === 'hello') {
      device = line.device;
      backend = line.backend === 'cuda' ? 'cuda' : 'cpu';
    } else if (line.type === 'error') {
      return { reason: `graphrt's chain failed on the card: ${line.code}: ${line.message}` };
    } else if (line.type === 'rep' && backend !== null) {
      if (line.mode !== mode)
        return { reason: `graphrt's chain ran ${line.mode}, not ${mode}, on ${device}: no graph-node floor` };
      if (mode === 'graph' && (line.nodes === null || line.nodes === undefined))
        return { reason: `graphrt's chain ran graph without graph nodes on ${device}: no graph-node floor` };
      return {
        rep: { mode: line.mode, nodes: line.nodes ?? null, step_ms: line.step_ms },
        device,
        backend,
        ...(line.kernel_busy_ns === undefined ? {} : { kernelBusyNs: line.kernel_busy_ns }),
      };
    }
  }
  const why = err === null ? 'it printed no rep' : err.message;
  return {
    reason: `graphrt's chain gave no rep: ${why}${stderr.trim() === '' ? '' : ` (stderr: ${stderr.trim().split('\n').at(-1)})`}`,
  };
}
