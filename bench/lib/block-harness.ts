/**
 * One block attempt through the real worker path, in this process: a private redis-server, the
 * real LeaseStore (acquire-gang.lua), BlockExecutor, EventStream (append-event.lua) and
 * ResultStore (commit-block.lua), graphrt ranks on CPU cards. What is left out is only what sits
 * around the executor in `orch worker`: BullMQ delivery and the grant signature.
 */

import type { Redis } from 'ioredis';
import { pino } from 'pino';
import type { BlockJob } from '../../jobs/block-job.ts';
import type { Card } from '../../jobs/card.ts';
import { type BusyShareRow, busyShare } from '../../orchestrator/stats/busy-share.ts';
import { orchKeys } from '../../store/keys.ts';
import { LeaseStore } from '../../store/lease-store.ts';
import { RepProgress } from '../../store/rep-progress.ts';
import { ResultStore } from '../../store/result-store.ts';
import { BlockExecutor } from '../../worker/block-executor.ts';
import { type ForeignProcessProbe, HostForeignProcessProbe } from '../../worker/foreign-processes.ts';
import type { RankRunner } from '../../worker/rank-runner.ts';
import { SlowProbe } from './slow-probe.ts';
import { StampedEventStream } from './stamped-event-stream.ts';

const HOST = 'bench';

export interface BlockRun {
  row: BusyShareRow;
  /** wall time of execute(), ms (this process's clock) */
  wall_ms: number;
  /** rep request id → when its line's append was answered by Redis (CLOCK_MONOTONIC ns) */
  written: Map<string, number>;
}

export class BlockHarness {
  private readonly leases: LeaseStore;
  private readonly results: ResultStore;
  private readonly log = pino({ level: 'silent' });

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly lockDir: string,
    /** extra ms per foreign-process look (bench/lib/slow-probe.ts): a GPU host's nvidia-smi, emulated; or the probe itself */
    private readonly probeMs: number | ForeignProcessProbe = 0,
  ) {
    this.leases = new LeaseStore(redis, { prefix });
    this.results = new ResultStore(redis, { prefix });
  }

  /** Runs `job` (its experiment, block, cards filled in here) on `cards` with `runner`. */
  async run(
    runner: RankRunner,
    cards: Card[],
    job: Omit<BlockJob, 'host' | 'cards' | 'epoch' | 'attempt'>,
  ): Promise<BlockRun> {
    const keys = orchKeys(this.prefix);
    // the worker's writes refuse an experiment that does not exist: write the hash submit would
    await this.redis.hsetnx(keys.exp(job.experiment), 'state', 'running');
    const ids = cards.map((c) => c.id);
    const g = await this.leases.acquireGang({
      cards: ids,
      owner: HOST,
      ttlMs: 30_000,
      experiment: job.experiment,
      block: job.block,
    });
    if (!g.granted) throw new Error(`cards busy: ${JSON.stringify(g.busy)}`);
    const stream = new StampedEventStream(
      this.redis,
      { stream: keys.events(job.experiment), exp: keys.exp(job.experiment), budget: keys.eventBudget(job.experiment) },
      this.log,
    );
    const executor = new BlockExecutor(
      {
        host: HOST,
        cards: new Map(cards.map((c) => [c.id, c])),
        lockDir: this.lockDir,
        leaseTtlMs: 30_000,
        renewEveryMs: 5_000,
        requestTimeoutMs: 120_000,
        foreignPollMs: 100,
        closeGraceMs: 5_000,
      },
      {
        leases: this.leases,
        results: this.results,
        progress: new RepProgress(this.redis, this.prefix),
        runner,
        probe:
          typeof this.probeMs !== 'number'
            ? this.probeMs
            : this.probeMs > 0
              ? new SlowProbe(new HostForeignProcessProbe(), this.probeMs)
              : new HostForeignProcessProbe(),
        events: () => stream,
        log: this.log,
        stopping: () => false,
      },
    );
    const t0 = performance.now();
    await executor.execute({ ...job, host: HOST, cards: ids, epoch: g.epoch, attempt: 1 });
    const wall = performance.now() - t0;
    const row = busyShare(
      Object.values(await this.results.results(job.experiment)),
      await this.results.commits(job.experiment),
    ).find((r) => r.block === job.block);
    if (!row) throw new Error(`block ${job.block} of ${job.experiment}: no committed start/commit events`);
    return { row, wall_ms: wall, written: stream.written };
  }
}

/** CPU cards of the bench host: cpu:0..n-1. */
export function cpuCards(n: number): Card[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `cpu:${i}@${HOST}`,
    host: HOST,
    backend: 'cpu' as const,
    index: i,
    uuid: `cpu:${i}@${HOST}`,
    name: 'bench cpu',
  }));
}
