/**
 * The worker's side of the exchange (ranklib/PROTOCOL.md "Exchange") for one block attempt:
 * rank 0's bytes are published in the gang's staging (store/gang-staging.ts, once per key), every
 * rank's worker (this host's, or another part's of a spread gang) polls for them until the
 * deadline. One path for a gang on one host and across hosts.
 */
import { OrchError } from '../jobs/errors.ts';
import type { AttemptRef, GangStaging } from '../store/gang-staging.ts';

export interface GangExchangeOptions {
  /** how long a rank waits for rank 0's bytes (the block's hello deadline) */
  deadlineMs: number;
  pollMs?: number;
  /** the gang's fate: its failure ends every wait */
  race: <T>(p: Promise<T>) => Promise<T>;
}

export class GangExchange {
  constructor(
    private readonly staging: GangStaging,
    private readonly ref: AttemptRef,
    private readonly opts: GangExchangeOptions,
  ) {}

  /** Rank 0 publishes `data` and gets it back; every other rank waits for rank 0's bytes. */
  async exchange(rank: number, key: string, data: Buffer | null): Promise<Buffer> {
    const { ref, opts } = this;
    const where = `block ${ref.block} attempt ${ref.attempt}`;
    if (rank === 0) {
      if (data === null)
        throw new OrchError(
          'RANK_EXCHANGE',
          `exchange "${key}": rank 0 passed no bytes (rank 0 publishes them; every other rank passes null)`,
        );
      // the keys live as long as a rank may still wait for them
      const r = await opts.race(this.staging.publishExchange(ref, key, data, opts.deadlineMs * 2));
      if (r === 'other')
        throw new OrchError(
          'RANK_EXCHANGE',
          `exchange "${key}" of ${where}: rank 0 published it twice with different bytes`,
        );
      return data;
    }
    if (data !== null)
      throw new OrchError(
        'RANK_EXCHANGE',
        `exchange "${key}": rank ${rank} passed bytes; only rank 0 publishes (pass null/None on every other rank)`,
      );
    const deadline = Date.now() + opts.deadlineMs;
    for (;;) {
      const got = await opts.race(this.staging.exchanged(ref, key));
      if (got !== null) return got;
      if (Date.now() > deadline) {
        throw new OrchError(
          'RANK_EXCHANGE',
          `exchange "${key}" of ${where}: rank 0 did not publish it within ${opts.deadlineMs} ms (rank ${rank} waited; rank 0 never reached its exchange "${key}")`,
        );
      }
      await opts.race(new Promise((r) => setTimeout(r, opts.pollMs ?? 20)));
    }
  }
}
