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
 * (torchrun's agent does).
 */
export interface CommandGang {
  /** rank 0's address: 127.0.0.1 on one host, the leading host's advertised address across hosts */
  masterAddr: string;
  masterPort: number;
  localRank: number;
  localWorld: number;
  groupRank: number;
  /** rank 0's bytes of exchange `key` (rank 0 passes them, every other rank null); rejects past the deadline */
  exchange(key: string, data: Buffer | null): Promise<Buffer>;
}

/** torchrun's variables for `rank` of `world` (RANK, WORLD_SIZE, LOCAL_RANK, …). */
export function torchrunEnv(gang: Omit<CommandGang, 'exchange'>, rank: number, world: number): Record<string, string> {
  return {
    MASTER_ADDR: gang.masterAddr,
    MASTER_PORT: String(gang.masterPort),
    RANK: String(rank),
    WORLD_SIZE: String(world),
    LOCAL_RANK: String(gang.localRank),
    LOCAL_WORLD_SIZE: String(gang.localWorld),
    GROUP_RANK: String(gang.groupRank),
  };
}
