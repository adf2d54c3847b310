/**
 * `/bull`: BullMQ's own view of orch's queues (bull-board), read-only: no retry, clean or
 * remove buttons; the nightly queue and one dispatch queue per host, refreshed as hosts
 * register (blocks have no queue of their own: the leader drives them from their state, and the
 * dashboard's experiment and queue pages show them). Job data and scheduler templates are shown
 * with their secrets masked (redact-secrets.ts): a host job carries the spec's run.env and the
 * scheduler's grant MAC, a nightly suite its alert webhook.
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import { CardRegistry } from '../../store/card-registry.ts';
import { hostQueue, QUEUES } from '../../store/keys.ts';
import { type DashboardContext, fromRedis } from './dashboard-context.ts';
import { redactJobData } from './redact-secrets.ts';

export const BULL_BASE = '/bull';

/** bull-board's BullMQ adapter, read-only, with every job's data and return value masked. */
class RedactedAdapter extends BullMQAdapter {
  constructor(queue: Queue) {
    super(queue, { readOnlyMode: true });
    this.setFormatter('data', redactJobData);
    this.setFormatter('returnValue', redactJobData);
  }

  override async getJobSchedulers(): ReturnType<BullMQAdapter['getJobSchedulers']> {
    return (await super.getJobSchedulers()).map((s) =>
      s.template ? { ...s, template: redactJobData(s.template) as typeof s.template } : s,
    );
  }
}

export async function registerBullBoard(
  app: FastifyInstance,
  ctx: DashboardContext,
): Promise<{ refresh(): Promise<void>; close(): Promise<void> }> {
  const adapter = new FastifyAdapter();
  adapter.setBasePath(BULL_BASE);
  const queues = new Map<string, Queue>();
  const board = createBullBoard({
    queues: [],
    serverAdapter: adapter,
    options: { uiConfig: { boardTitle: 'orch queues' } },
  });
  const refresh = async () => {
    const hosts = await fromRedis(ctx, async () => [
      ...new Set((await new CardRegistry(ctx.redis, { prefix: ctx.prefix }).all()).map((c) => c.host)),
    ]).catch(() => []);
    let added = false;
    for (const name of [QUEUES.nightly, ...hosts.map(hostQueue)]) {
      if (queues.has(name)) continue;
      queues.set(name, new Queue(name, { connection: ctx.redis, prefix: ctx.prefix }));
      added = true;
    }
    if (added) board.replaceQueues([...queues.values()].map((q) => new RedactedAdapter(q)));
  };
  await refresh();
  await app.register(adapter.registerPlugin(), { prefix: BULL_BASE });
  return {
    refresh,
    close: async () => {
      for (const q of queues.values()) await q.close();
    },
  };
}
