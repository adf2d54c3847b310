/**
 * What graphrt's chain measured on a card for the trace probe's graph-node floor
 * (orchestrator/stats/graph-node-floor.ts computes the floor from it): the chain's graph reps, run
 * on the card a resident command rank holds before its program starts (worker/command/chain-floor.ts),
 * or why none ran. Carried on the rank's hello and into the committed probe record; never a number
 * written down in its place.
 */
import { z } from 'zod';

/** The most chain reps one rank runs (each is one `graphrt run`). */
export const MAX_CHAIN_FLOOR_REPS = 16;
/** The most measured steps a chain rep may carry. */
export const MAX_CHAIN_FLOOR_STEPS = 4096;

export const ChainFloorRepSchema = z.strictObject({
  mode: z.enum(['graph', 'eager']),
  /** graph nodes per step (graphrt's `nodes`) */
  nodes: z.int().min(0).nullable(),
  step_ms: z.array(z.number().min(0)).min(1).max(MAX_CHAIN_FLOOR_STEPS),
});
export type ChainFloorRep = z.infer<typeof ChainFloorRepSchema>;

export const ChainFloorRunSchema = z.discriminatedUnion('source', [
  z.strictObject({
    source: z.literal('graphrt-chain'),
    /** graphrt's backend: on `cpu` the chain replays a host emulation, so its floor is no GPU's */
    backend: z.enum(['cpu', 'cuda']),
    device: z.string().max(256),
    kernels: z.int().positive(),
    reps: z.array(ChainFloorRepSchema).min(1).max(MAX_CHAIN_FLOOR_REPS),
    /**
     * the chain's device busy time per kernel, from one more rep traced by orch's injection library
     * (native/PROTOCOL.md `kernel_busy_ns`), or why none was traced: the floor less it is what a graph adds
     * per node (orchestrator/stats/graph-node-floor.ts). Optional: records made before it.
     */
    kernel: z
      .union([z.strictObject({ ns: z.number().positive() }), z.strictObject({ reason: z.string().min(1).max(1000) })])
      .optional(),
  }),
  z.strictObject({ source: z.literal('none'), reason: z.string().min(1).max(1000) }),
]);
export type ChainFloorRun = z.infer<typeof ChainFloorRunSchema>;
