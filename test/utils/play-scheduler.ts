/**
 * The test plays the scheduler with the worker's primitives only: live cards from the registry,
 * gang leases (acquireGang, all or none), the dispatch primitive, and re-dispatch of a failed or
 * lost attempt as attempt + 1 on new leases, avoiding the host that lost it.
 */
import type { Redis } from 'ioredis';
import type { BlockJob } from '../../jobs/block-job.ts';
import { BlockDispatcher, type AttemptEnd } from '../../orchestrator/dispatch/block-dispatcher.ts';
import { CardRegistry } from '../../store/card-registry.ts';
import { LeaseStore } from '../../store/lease-store.ts';

export interface AttemptRecord {
  block: number;
  attempt: number;
  epoch: number;
  host: string;
  cards: string[];
  end: AttemptEnd;
}

export interface PlayOptions {
  redis: Redis;
  prefix: string;
  experiment: string;
  blocks: number[];
  ranks: number;
  /** concurrent scheduler slots */
  slots: number;
  grantTtlMs: number;
  job: (p: Pick<BlockJob, 'experiment' | 'block' | 'attempt' | 'epoch' | 'host' | 'cards'>) => BlockJob;
  maxAttempts?: number;
  timeoutMs: number;
  lostGraceMs?: number;
  /** called right after each dispatch */
  onDispatch?: (job: BlockJob) => void;
}

export async function playScheduler(o: PlayOptions): Promise<AttemptRecord[]> {
  const leases = new LeaseStore(o.redis, { prefix: o.prefix });
  const registry = new CardRegistry(o.redis, { prefix: o.prefix });
  const dispatcher = new BlockDispatcher(o.redis, { prefix: o.prefix, pollMs: 25, lostGraceMs: o.lostGraceMs ?? 300 });
  const todo = o.blocks.map((block) => ({ block, attempt: 1, avoid: new Set<string>() }));
  const records: AttemptRecord[] = [];
  const deadline = Date.now() + o.timeoutMs;

  const grant = async (b: (typeof todo)[number]) => {
    for (;;) {
      if (Date.now() > deadline) throw new Error(`block ${b.block}: no gang of ${o.ranks} granted before the deadline`);
      for (const [host, cards] of await registry.liveCardsByHost()) {
        if (b.avoid.has(host)) continue;
        const held = new Set((await leases.held(cards.map((c) => c.id))).map((l) => l.card));
        const free = cards.filter((c) => !held.has(c.id)).slice(0, o.ranks).map((c) => c.id);
        if (free.length < o.ranks) continue;
        const r = await leases.acquireGang({ cards: free, owner: host, ttlMs: o.grantTtlMs, experiment: o.experiment, block: b.block });
        if (r.granted) return { host, cards: free, epoch: r.epoch };
      }
      await new Promise((r) => setTimeout(r, 15));
    }
  };

  const slot = async () => {
    for (let b = todo.shift(); b; b = todo.shift()) {
      const g = await grant(b);
      const job = o.job({ experiment: o.experiment, block: b.block, attempt: b.attempt, epoch: g.epoch, host: g.host, cards: g.cards });
      await dispatcher.dispatch(job);
      o.onDispatch?.(job);
      const end = await dispatcher.waitEnd(job, { timeoutMs: Math.max(1, deadline - Date.now()) });
      records.push({ block: b.block, attempt: b.attempt, epoch: g.epoch, host: g.host, cards: g.cards, end });
      if (end.state !== 'completed') {
        await leases.release({ cards: g.cards, epoch: g.epoch });
        if (b.attempt >= (o.maxAttempts ?? 3)) continue;
        todo.push({ block: b.block, attempt: b.attempt + 1, avoid: new Set([...b.avoid, g.host]) });
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: o.slots }, slot));
  } finally {
    await dispatcher.close();
  }
  return records;
}
