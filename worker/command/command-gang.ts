/**
 * What a command gang's rank gets from the gang (docs/ARCHITECTURE.md "Gangs of a user's
 * program"): torchrun's environment, so `torch.distributed.init_process_group()` starts
 * unchanged, and the exchange (ranklib/PROTOCOL.md "Exchange"), so a program without a TCP store
 * gets rank 0's bytes (an NCCL unique id).
 *
 * MASTER_PORT is chosen by rank 0's worker for each block attempt (worker/free-port.ts: a new
 * attempt gets a new port) and reaches the other hosts of a spread gang through the gang's
 * staging (worker/spread-part.ts). GROUP_RANK is the host part's index where the parts are of
 * equal size (first_rank / the part's cards); a part knows only its own size, so with unequal
 * parts it is that quotient still — unique per part, not dense. torch.distributed never reads it
 * (torchrun's agent does). `run.launcher: torchrun` (jobs/spec-schema/launcher.ts) adds the rest of
 * torchrun's environment (launcherEnv).
 */
import type { Card } from '../../jobs/card.ts';
import type { Launcher } from '../../jobs/spec-schema/launcher.ts';

export interface CommandGang {
  /** rank 0's address: 127.0.0.1 on one host, the leading host's advertised address across hosts */
  masterAddr: string;
  masterPort: number;
  localRank: number;
  localWorld: number;
  groupRank: number;
  /** the gang's attempt, the same on every host: `<experiment>.b<block>.a<attempt>` */
  runId: string;
  /** this host part's cuda cards in local-rank order (their UUIDs); empty on cpu cards */
  localDevices: readonly string[];
  /** rank 0's bytes of exchange `key` (rank 0 passes them, every other rank null); rejects past the deadline */
  exchange(key: string, data: Buffer | null): Promise<Buffer>;
}

/** What of `workload.run` shapes a rank's torchrun environment. */
export interface TorchrunRun {
  launcher?: Launcher | undefined;
  env?: Record<string, string> | undefined;
}

/**
 * torchrun's variables for `rank` of `world`: the rendezvous (RANK, WORLD_SIZE, LOCAL_RANK, …) for
 * every command gang, and under `launcher: torchrun` the rest of what torchrun's agent sets
 * (launcherEnv).
 */
export function torchrunEnv(
  gang: Omit<CommandGang, 'exchange'>,
  rank: number,
  world: number,
  run: TorchrunRun = {},
): Record<string, string> {
  return {
    ...(run.launcher === 'torchrun' ? launcherEnv(gang, rank, world, run.env ?? {}) : {}),
    MASTER_ADDR: gang.masterAddr,
    MASTER_PORT: String(gang.masterPort),
    RANK: String(rank),
    WORLD_SIZE: String(world),
    LOCAL_RANK: String(gang.localRank),
    LOCAL_WORLD_SIZE: String(gang.localWorld),
    GROUP_RANK: String(gang.groupRank),
  };
}

/**
 * The rest of torchrun's agent's environment (torch/distributed/elastic/agent/server/
 * local_elastic_agent.py `_start_workers`), as torchrun with its defaults sets it: one role
 * ("default"), no restarts in place (a failed gang is a new attempt on new leases, with a new run
 * id), no agent store (rank 0's init_process_group hosts the TCPStore on MASTER_PORT, as under
 * torchrun's c10d rendezvous), NCCL's async error handling on, and OMP_NUM_THREADS 1 when a host
 * runs several ranks. Where torchrun keeps a variable the user set, `run.env` keeps it here.
 * CUDA_VISIBLE_DEVICES is visibleDevices'.
 */
function launcherEnv(
  gang: Omit<CommandGang, 'exchange'>,
  rank: number,
  world: number,
  userEnv: Record<string, string>,
): Record<string, string> {
  const defaults: Record<string, string> = {
    NCCL_ASYNC_ERROR_HANDLING: '1',
    TORCH_NCCL_ASYNC_ERROR_HANDLING: '1',
    ...(gang.localWorld > 1 ? { OMP_NUM_THREADS: '1' } : {}),
  };
  const kept = Object.fromEntries(Object.entries(defaults).filter(([name]) => userEnv[name] === undefined));
  return {
    ...kept,
    ROLE_NAME: 'default',
    ROLE_RANK: String(rank),
    ROLE_WORLD_SIZE: String(world),
    GROUP_WORLD_SIZE: String(Math.ceil(world / gang.localWorld)),
    TORCHELASTIC_RUN_ID: gang.runId,
    TORCHELASTIC_RESTART_COUNT: '0',
    TORCHELASTIC_MAX_RESTARTS: '0',
    TORCHELASTIC_USE_AGENT_STORE: 'False',
  };
}

/**
 * A cuda rank's CUDA_VISIBLE_DEVICES: its own card; under `launcher: torchrun` its host's cards of
 * the gang in local-rank order, so `cuda:LOCAL_RANK` is its card as on a torchrun node (the
 * others' cards are held by the same gang). Empty on a cpu card.
 */
export function visibleDevices(
  card: Pick<Card, 'backend' | 'uuid'>,
  gang: Pick<CommandGang, 'localDevices'> | undefined,
  launcher: Launcher | undefined,
): string {
  if (card.backend !== 'cuda') return '';
  return launcher === 'torchrun' && gang !== undefined && gang.localDevices.length > 0
    ? gang.localDevices.join(',')
    : card.uuid;
}
