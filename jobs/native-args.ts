/**
 * The only place that turns a compiled block job into graphrt requests, flags and environment
 * (native/PROTOCOL.md). The worker never spells a graphrt flag or request field itself.
 */

import type { BlockArm, BlockJob } from './block-job.ts';
import { OrchError } from './errors.ts';
import { GRAPHRT_TOGGLES, type GraphrtToggle } from './graphrt-toggles.ts';

export type NativeOp = 'rep' | 'identity' | 'probe';

/** One line written to `graphrt serve`'s stdin. */
export interface NativeRequest {
  id: string;
  op: NativeOp;
  arm: string;
  workload: string;
  params: Record<string, number>;
  toggles: Record<GraphrtToggle, boolean>;
  warmup: number;
  steps: number;
  replays?: number;
  seed: number;
}

/** How one rank process is started: `graphrt serve` with these args and extra env. */
export interface NativeProcess {
  args: string[];
  env: Record<string, string>;
}

export interface RankPlacement {
  rank: number;
  world: number;
  backend: 'cpu' | 'cuda';
  /** what CUDA_VISIBLE_DEVICES gets (the GPU UUID); ignored for cpu cards */
  uuid: string;
  /** the host guard: the flock file of the card, held by the rank for its whole life */
  lockPath: string;
  /**
   * The card's lock handed down instead (ranks of several builds on one card, worker/graphrt-runner.ts):
   * the worker's open file description of `lockPath`, already locked, inherited as `fd`. `flag`:
   * this graphrt knows `--card-lock-fd` (the checkout's own); a build of another commit may not,
   * and holds the lock by inheriting the descriptor alone.
   */
  lockFd?: { fd: number; flag: boolean };
  /** world > 1: where the gang's ranks meet (PROTOCOL.md "Multi-rank") */
  rendezvous?: RankRendezvous;
}

export interface RankRendezvous {
  /** a Unix socket path (one host's gang) or tcp://HOST:PORT (across hosts; rank 0: PORT 0), the same for every rank */
  address: string;
  /** rank 0 over tcp: the file graphrt writes HOST:PORT to once it listens */
  publish?: string;
  /** the attempt's secret every rank presents; passed in the environment, never as an argument */
  secret?: string;
}

/**
 * Every graphrt toggle of a native arm, on or off. A native arm's toggles are booleans (the
 * planner makes them so; only a command workload's toggles carry strings), so a string here is
 * a payload orch built wrong, not something to coerce.
 */
export function nativeToggles(arm: BlockArm): Record<GraphrtToggle, boolean> {
  const out = {} as Record<GraphrtToggle, boolean>;
  for (const t of GRAPHRT_TOGGLES) {
    const v = arm.toggles[t] ?? false;
    if (typeof v !== 'boolean')
      throw new OrchError(
        'BLOCK_PAYLOAD_INVALID',
        `arm "${arm.name}": graphrt toggle ${t} is ${JSON.stringify(v)}, not a boolean`,
      );
    out[t] = v;
  }
  return out;
}

export function toNativeRequest(job: BlockJob, arm: BlockArm, op: { op: NativeOp; id: string }): NativeRequest {
  const w = job.workload;
  if (w.runtime !== 'native') throw new Error(`toNativeRequest: workload runtime is "${w.runtime}", not native`);
  const req: NativeRequest = {
    id: op.id,
    op: op.op,
    arm: arm.name,
    workload: w.kind,
    params: { ...(w.params as Record<string, number>), ...(arm.params ?? {}) },
    toggles: nativeToggles(arm),
    warmup: job.warmup,
    steps: job.steps,
    seed: 1,
  };
  if (op.op === 'identity') {
    // the replay count comes from the spec (gates.identity.replays, default in jobs/spec.ts) only
    if (job.gates.identity === null)
      throw new Error(`toNativeRequest: identity op ${op.id} for block ${job.block}, whose identity gate is off`);
    req.replays = job.gates.identity.replays;
  }
  return req;
}

/**
 * `graphrt hello` on a backend: what the binary is and what it can run. `cpu` hides every GPU,
 * as a cpu card's `serve` does, so the answer is the one a cpu rank would get.
 */
export function toNativeHello(backend: 'auto' | 'cuda' | 'cpu'): NativeProcess {
  return { args: ['hello', '--backend', backend], env: backend === 'cpu' ? { CUDA_VISIBLE_DEVICES: '' } : {} };
}

/** `graphrt serve` for one rank of the gang; a cpu card hides every GPU from the process. */
export function toNativeProcess(job: BlockJob, placement: RankPlacement): NativeProcess {
  const w = job.workload;
  if (w.runtime !== 'native') throw new Error(`toNativeProcess: workload runtime is "${w.runtime}", not native`);
  const backend = placement.backend === 'cpu' ? 'cpu' : w.backend;
  const lock =
    placement.lockFd === undefined
      ? ['--card-lock', placement.lockPath]
      : placement.lockFd.flag
        ? ['--card-lock-fd', String(placement.lockFd.fd)]
        : [];
  const args = ['serve', '--backend', backend, ...lock];
  if (placement.world > 1) {
    args.push('--world', String(placement.world), '--rank', String(placement.rank));
    const rv = placement.rendezvous;
    if (rv !== undefined) args.push('--rendezvous', rv.address);
    if (rv?.publish !== undefined) args.push('--rendezvous-publish', rv.publish);
  }
  const env: Record<string, string> = { CUDA_VISIBLE_DEVICES: placement.backend === 'cpu' ? '' : placement.uuid };
  if (placement.world > 1 && placement.rendezvous?.secret !== undefined)
    env.GRAPHRT_RENDEZVOUS_SECRET = placement.rendezvous.secret;
  return { args, env };
}

/** The chain run that measures a card's graph-node floor for a trace probe (worker/command/chain-floor.ts). */
export interface ChainFloorRequest {
  backend: 'cpu' | 'cuda';
  /** what CUDA_VISIBLE_DEVICES gets (the GPU UUID); ignored for cpu cards */
  uuid: string;
  /** the card's lock, already locked by the worker, inherited as this descriptor */
  lockFd: number;
  kernels: number;
  warmup: number;
  steps: number;
  /** graph (the floor's reps) or eager (the traced rep whose busy time per kernel comes off the floor) */
  mode: 'graph' | 'eager';
}

/**
 * `graphrt run` of one rep of the chain (native/PROTOCOL.md "Workloads": `kernels` launches of
 * `x -> ±x + b` per step), on the card a resident command rank holds: in graph mode its nodes cost
 * what a graph node costs on this card when the kernel does nearly nothing.
 */
export function toChainFloorRun(r: ChainFloorRequest): NativeProcess {
  return {
    args: [
      'run',
      '--backend',
      r.backend,
      '--card-lock-fd',
      String(r.lockFd),
      '--workload',
      'chain',
      '--kernels',
      String(r.kernels),
      ...(r.mode === 'graph' ? ['--graph'] : []),
      '--warmup',
      String(r.warmup),
      '--steps',
      String(r.steps),
      '--arm',
      'graph-node-floor',
    ],
    env: { CUDA_VISIBLE_DEVICES: r.backend === 'cpu' ? '' : r.uuid },
  };
}
