/**
 * The stand-in hosts (stand-in-host.ts) in a child process of their own, so the scheduler's
 * process CPU is measured without them. Started by scale-run.ts with fork(); speaks over IPC:
 *
 *   parent → child  { config }            start the hosts; answers { ready: true } once registered
 *   parent → child  { stop: true }        stop them; answers { records } and exits
 *
 * `config`: FleetConfig (JSON). Each host draws its run times from its own seeded stream.
 */
import { Redis } from 'ioredis';
import { mulberry32 } from '../../jobs/seeded-random.ts';
import { type HostJobRecord, StandInHost } from './stand-in-host.ts';

export interface FleetConfig {
  url: string;
  prefix: string;
  /** this process's hosts: `first` .. `first + hosts - 1` of the fleet (BENCH_FLEET_PROCS splits it) */
  first: number;
  hosts: number;
  cardsPerHost: number;
  /** hex of the cluster secret (the parent's scheduler signs with the same) */
  secret: string;
  heartbeatMs: number;
  runMs: [number, number];
  seed: number;
}

export type FleetMessage = { ready: true } | { records: HostJobRecord[] };

/** The host names of a fleet: h00, h01, … */
export function fleetHostName(i: number): string {
  return `h${String(i).padStart(2, '0')}`;
}

async function serve(c: FleetConfig): Promise<void> {
  const connections: Redis[] = [];
  const hosts: StandInHost[] = [];
  for (let i = c.first; i < c.first + c.hosts; i++) {
    const redis = new Redis(c.url, { maxRetriesPerRequest: null });
    connections.push(redis);
    const random = mulberry32(c.seed + i);
    const [lo, hi] = c.runMs;
    const host = new StandInHost(redis, {
      host: fleetHostName(i),
      cards: c.cardsPerHost,
      prefix: c.prefix,
      secret: Buffer.from(c.secret, 'utf8'),
      heartbeatMs: c.heartbeatMs,
      runMs: () => lo + random() * (hi - lo),
    });
    await host.start();
    hosts.push(host);
  }
  process.send?.({ ready: true } satisfies FleetMessage);
  await new Promise<void>((resolve) => process.on('message', (m: { stop?: boolean }) => m.stop && resolve()));
  await Promise.all(hosts.map((h) => h.stop()));
  process.send?.({ records: hosts.flatMap((h) => h.records) } satisfies FleetMessage, () => {
    for (const r of connections) r.disconnect();
    process.exit(0);
  });
}

process.once('message', (m: { config?: FleetConfig }) => {
  if (m.config)
    serve(m.config).catch((err: unknown) => {
      console.error(err);
      process.exit(1);
    });
});
