/** Reading an experiment's event stream (`<prefix>:experiment:<id>:events`) in tests. */
import type { Redis } from 'ioredis';
import { orchKeys } from '../../store/keys.ts';
import { waitFor } from './wait-for.ts';

export interface StreamEvent {
  block: number;
  attempt: number;
  epoch: number;
  host: string;
  card: string;
  rank: string;
  event: Record<string, unknown> & { type: string };
}

export async function readEvents(redis: Redis, prefix: string, experiment: string): Promise<StreamEvent[]> {
  const rows = await redis.xrange(orchKeys(prefix).events(experiment), '-', '+');
  return rows.map(([, fields]) => {
    const f: Record<string, string> = {};
    for (let i = 0; i < fields.length; i += 2) f[fields[i] as string] = fields[i + 1] as string;
    return {
      block: Number(f.block),
      attempt: Number(f.attempt),
      epoch: Number(f.epoch),
      host: f.host ?? '',
      card: f.card ?? '',
      rank: f.rank ?? '',
      event: JSON.parse(f.event ?? '{}'),
    };
  });
}

export async function waitForEvents(
  redis: Redis,
  prefix: string,
  experiment: string,
  what: string,
  pred: (evs: StreamEvent[]) => boolean,
  timeoutMs: number,
): Promise<StreamEvent[]> {
  let last: StreamEvent[] = [];
  await waitFor(
    what,
    async () => {
      last = await readEvents(redis, prefix, experiment);
      return pred(last);
    },
    { timeoutMs, intervalMs: 10 },
  );
  return last;
}

/** pids of the ranks' hello lines of one attempt. */
export function rankPids(evs: StreamEvent[], attempt: number): number[] {
  return evs.filter((e) => e.attempt === attempt && e.event.type === 'hello').map((e) => Number(e.event.pid));
}
