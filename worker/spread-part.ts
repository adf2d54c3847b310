/**
 * This host's part of a gang across hosts (jobs/spread-gang.ts), for the block executor:
 *
 * - Rendezvous: the leading part starts rank 0 on `tcp://<advertise>:0`; graphrt writes the port
 *   it bound to a file, which this part publishes for the attempt (store/gang-staging.ts); the
 *   other parts wait for that key and start their ranks on it. Every rank presents the attempt's
 *   secret (jobs/spread-gang.ts rendezvousSecret), which travels in the environment only.
 * - Results: every other part stages its reps and gates under the gang's epoch and keeps its
 *   leases until the block is committed; the leading part waits until every part staged, merges
 *   (worker/merge-gang-results.ts) and commits once, fenced by every part's leases.
 * - Capture blockers: an arm goes unmeasured only when every rank of the gang answered its op
 *   CAPTURE_FAILED; each part whose ranks all did marks them in the staging and waits for the
 *   others' (captureFailedEverywhere).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type BlockJob, gangWorld } from '../jobs/block-job.ts';
import { OrchError } from '../jobs/errors.ts';
import type { RankRendezvous } from '../jobs/native-args.ts';
import { leadsGang } from '../jobs/spread-gang.ts';
import type { AttemptRef, GangStaging } from '../store/gang-staging.ts';
import type { ResultStore } from '../store/result-store.ts';
import { mergeGangResults, type PartResults } from './merge-gang-results.ts';

export interface SpreadPartOptions {
  host: string;
  /** the address of this host the other hosts' ranks reach rank 0 at */
  advertise: string;
  /** how long the rendezvous and staged keys live, and how long a part waits for the others */
  waitMs: number;
  pollMs: number;
}

export class SpreadPart {
  private readonly ref: AttemptRef;

  constructor(
    private readonly job: BlockJob,
    private readonly opts: SpreadPartOptions,
    private readonly staging: GangStaging,
    private readonly results: ResultStore,
    /** rejects with the gang's failure: every wait here ends with it */
    private readonly race: <T>(p: Promise<T>) => Promise<T>,
  ) {
    this.ref = { experiment: job.experiment, block: job.block, attempt: job.attempt };
  }

  get leads(): boolean {
    return leadsGang(this.job);
  }

  /**
   * Starts the part's ranks: the leading part's rank 0 first, which publishes where it listens;
   * then every other rank of the part on that address. `start(i, rv)` starts local rank i.
   */
  async startRanks(dir: string, secret: string, start: (i: number, rv: RankRendezvous) => void): Promise<void> {
    let address: string;
    if (this.leads) {
      const publish = join(dir, 'rv.addr');
      const host = this.opts.advertise.includes(':') ? `[${this.opts.advertise}]` : this.opts.advertise;
      start(0, { address: `tcp://${host}:0`, publish, secret });
      address = await this.poll(`rank 0 of block ${this.job.block} attempt ${this.job.attempt} to listen`, async () =>
        readIfThere(publish),
      );
      await this.staging.publishRendezvous(this.ref, address, this.opts.waitMs);
    } else {
      address = await this.poll(
        `the leading part of block ${this.job.block} attempt ${this.job.attempt} to publish its rendezvous`,
        () => this.staging.rendezvousAddress(this.ref),
      );
    }
    for (let i = this.leads ? 1 : 0; i < this.job.cards.length; i++) start(i, { address: `tcp://${address}`, secret });
  }

  /**
   * A command gang's MASTER_ADDR and MASTER_PORT (worker/command/command-gang.ts): the leading
   * part picks the port (`pickPort`) and publishes `ADDR:PORT` for the attempt; the other parts
   * wait for it. The leading part's address is the one it advertises to other hosts.
   */
  async masterAddress(pickPort: () => Promise<number>): Promise<{ addr: string; port: number }> {
    if (this.leads) {
      const port = await this.race(pickPort());
      const addr = this.opts.advertise;
      await this.race(
        this.staging.publishRendezvous(
          this.ref,
          `${addr.includes(':') ? `[${addr}]` : addr}:${port}`,
          this.opts.waitMs,
        ),
      );
      return { addr, port };
    }
    const published = await this.poll(
      `the leading part of block ${this.job.block} attempt ${this.job.attempt} to publish its MASTER_PORT`,
      () => this.staging.rendezvousAddress(this.ref),
    );
    const m = /^\[?(.*?)\]?:(\d+)$/.exec(published);
    if (m === null)
      throw new OrchError(
        'BLOCK_PAYLOAD_INVALID',
        `the rendezvous of block ${this.job.block} attempt ${this.job.attempt} is "${published}", not ADDR:PORT`,
      );
    return { addr: m[1] as string, port: Number(m[2]) };
  }

  /** A part that does not lead: stage its results, then hold its leases until the block is committed. */
  async stageAndAwaitCommit(own: PartResults): Promise<void> {
    const r = await this.race(
      this.staging.stage(this.ref, this.job.epoch, { host: this.opts.host, ...own }, this.opts.waitMs),
    );
    if (!r.staged) {
      throw new OrchError(
        'LEASE_LOST',
        `results of host ${this.opts.host}'s part of block ${this.job.block} attempt ${this.job.attempt} refused: card ${r.card} is ${r.holder === null ? 'no longer leased' : `leased under epoch ${r.holder}`}, not epoch ${this.job.epoch}`,
      );
    }
    await this.poll(`the leading part to commit block ${this.job.block} attempt ${this.job.attempt}`, async () =>
      (await this.results.committedAttempt(this.job.experiment, this.job.block)) === this.job.attempt ? true : null,
    );
  }

  /** The leading part: every part's results merged with its own, once all staged. */
  async gather(own: PartResults): Promise<PartResults> {
    const world = gangWorld(this.job);
    const others = await this.poll(
      `every part of block ${this.job.block} attempt ${this.job.attempt} to stage its results`,
      async () => {
        const staged = await this.staging.staged(this.ref);
        return own.cards.length + staged.reduce((n, p) => n + p.cards.length, 0) >= world ? staged : null;
      },
    );
    return mergeGangResults(own, others);
  }

  /**
   * Every rank of this part (`ranks`) answered op `opId` CAPTURE_FAILED: they are marked in the
   * staging, and every rank of the gang is awaited there for up to `graceMs`. Returns the ranks
   * of other parts not marked by then (none: the arm's capture failed everywhere, every part
   * blocks it); a rank whose capture succeeded would replay collectives the others never join.
   */
  async captureFailedEverywhere(opId: string, ranks: number[], graceMs: number): Promise<number[]> {
    await this.race(this.staging.markCaptureFailed(this.ref, opId, ranks, this.opts.host, this.opts.waitMs));
    const world = Array.from({ length: gangWorld(this.job) }, (_, r) => r);
    const deadline = Date.now() + graceMs;
    for (;;) {
      const marked = new Set(await this.race(this.staging.capturesFailed(this.ref, opId, world)));
      const missing = world.filter((r) => !marked.has(r));
      if (missing.length === 0 || Date.now() > deadline) return missing;
      await this.race(new Promise((r) => setTimeout(r, this.opts.pollMs)));
    }
  }

  async forget(): Promise<void> {
    await this.staging.forget(this.ref);
  }

  /** Polls `get` until it gives a value; the gang's failure or `waitMs` ends the wait. */
  private async poll<T>(what: string, get: () => Promise<T | null>): Promise<T> {
    const deadline = Date.now() + this.opts.waitMs;
    for (;;) {
      const v = await this.race(get());
      if (v !== null) return v;
      if (Date.now() > deadline) {
        throw new OrchError(
          'GANG_PART_TIMEOUT',
          `host ${this.opts.host} waited ${this.opts.waitMs} ms for ${what}; the gang's other hosts did not get there (their worker died or is stuck)`,
        );
      }
      await this.race(new Promise((r) => setTimeout(r, this.opts.pollMs)));
    }
  }
}

function readIfThere(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').trim() || null;
  } catch {
    return null;
  }
}
