/**
 * The grant planner alone (orchestrator/scheduler/grant-planner.ts): CPU per pass against the
 * length of the queue, on 512 cards of 64 hosts, a seeded mix of 1/2/4/8-rank blocks, with 0, 3
 * and 12 cards free. The scheduler runs a pass per event that frees or wants cards, so with a
 * long queue and a moderate grant rate (blocks of seconds) the planner's cost per waiting block is
 * paid on almost every grant; bench/scheduler-scale.ts measures the whole scheduler.
 *
 * Run: npm run bench -- grant-planner
 * Environment: BENCH_QUEUES (waiting blocks per row, "100,1000,5000"), BENCH_PASSES (timed passes
 * per row, 200; 50 more first, not timed).
 */
import { mulberry32 } from '../jobs/seeded-random.ts';
import {
  type CardSlot,
  type GrantInput,
  planGrants,
  type RunningBlock,
  shapeKey,
  type WaitingBlock,
} from '../orchestrator/scheduler/grant-planner.ts';

// the bench's own knobs, not orch's environment (cli/environment.ts): read as the other benches do
const env = process.env;
const queues = (env.BENCH_QUEUES ?? '100,1000,5000').split(',').map(Number);
const passes = Number(env.BENCH_PASSES ?? 200);
const RANKS = [1, 2, 4, 8];

const random = mulberry32(1);
const cards: CardSlot[] = Array.from({ length: 512 }, (_, i) => ({
  id: `cpu:${i % 8}@h${Math.floor(i / 8)}`,
  host: `h${Math.floor(i / 8)}`,
  backend: 'cpu',
  index: i % 8,
  version: '',
}));
const now = Date.now();

function input(waitingCount: number, freeCount: number): GrantInput {
  const waiting: WaitingBlock[] = Array.from({ length: waitingCount }, (_, i) => {
    const b = {
      key: `e${Math.floor(i / 32)}:${i % 32}`,
      ranks: RANKS[Math.floor(random() * RANKS.length)] as number,
      backend: 'cpu' as const,
      placement: 'host' as const,
      expectedMs: 200 + random() * 1800,
    };
    return { ...b, shape: shapeKey(b) };
  });
  const busy = new Set(cards.slice(freeCount).map((c) => c.id));
  // the busy cards as running attempts of about four cards, ending over the next two seconds
  const running: RunningBlock[] = [];
  for (let i = freeCount; i < cards.length; i += 4)
    running.push({ key: `r${i}`, cards: cards.slice(i, i + 4).map((c) => c.id), expectedEndMs: now + random() * 2000 });
  return { now, cards, busy, running, waiting, wantWhy: () => false };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
console.log('512 cards on 64 hosts; waiting blocks of 1/2/4/8 ranks (seeded); medians of timed passes');
console.log('waiting blocks | free cards | grants per pass | µs per pass (median) | µs per waiting block');
for (const n of queues) {
  for (const free of [0, 3, 12]) {
    const inp = input(n, free);
    for (let i = 0; i < 50; i++) planGrants(inp);
    const times: number[] = [];
    let grants = 0;
    for (let i = 0; i < passes; i++) {
      const t = process.hrtime.bigint();
      grants = planGrants(inp).grants.length;
      times.push(Number(process.hrtime.bigint() - t) / 1000);
    }
    const us = median(times);
    console.log(`${n} | ${free} | ${grants} | ${us.toFixed(0)} | ${(us / n).toFixed(2)}`);
  }
}
