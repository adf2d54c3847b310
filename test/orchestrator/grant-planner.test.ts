// FIFO gang granting with backfill (orchestrator/scheduler/grant-planner.ts), pure.
// The backfill property is checked against a simulation: granting every decision and running
// blocks to their expected end, the oldest waiting block must start no later than it would if
// nothing behind it were ever granted ahead of it.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type CardSlot,
  compareQueued,
  fitGang,
  type GrantInput,
  neverFits,
  planGrants,
  type WaitingBlock,
} from '../../orchestrator/scheduler/grant-planner.ts';

const cards = (host: string, n: number, backend: 'cpu' | 'cuda' = 'cuda'): CardSlot[] =>
  Array.from({ length: n }, (_, i) => ({ id: `${host}-${i}`, host, backend, index: i }));
const block = (key: string, ranks: number, expectedMs = 1000, extra: Partial<WaitingBlock> = {}): WaitingBlock => ({
  key,
  ranks,
  backend: 'auto',
  placement: 'host',
  expectedMs,
  ...extra,
});

test('grants in FIFO order while cards last; a later block does not jump a waiting one whose cards it would take', () => {
  const d = planGrants({
    now: 0,
    cards: cards('h1', 4),
    busy: new Set(['h1-0', 'h1-1']),
    running: [{ key: 'r', cards: ['h1-0', 'h1-1'], expectedEndMs: 10_000 }],
    waiting: [block('a', 1), block('b', 3, 60_000), block('c', 1, 60_000)],
  });
  assert.deepEqual(
    d.grants.map((g) => g.key),
    ['a'],
  );
  assert.match(d.why.get('b')!, /waiting for 3 free card/);
  // c fits in the one free card, but b is reserved those cards at t = 10 s and c would run 60 s
  assert.match(d.why.get('c')!, /behind .*b.*FIFO/);
});

test('backfill: a short block runs ahead of the oldest when it ends before the reservation', () => {
  const d = planGrants({
    now: 0,
    cards: cards('h1', 4),
    busy: new Set(['h1-0', 'h1-1']),
    running: [{ key: 'r', cards: ['h1-0', 'h1-1'], expectedEndMs: 10_000 }],
    waiting: [block('b', 3, 60_000), block('short', 1, 5_000), block('long', 1, 60_000)],
  });
  assert.deepEqual(
    d.grants.map((g) => g.key),
    ['short'],
  );
  assert.ok(d.why.get('long'));
});

test('backfill on cards the reservation does not need, whatever the length', () => {
  const d = planGrants({
    now: 0,
    cards: [...cards('h1', 2), ...cards('h2', 1)],
    busy: new Set(['h1-0']),
    running: [{ key: 'r', cards: ['h1-0'], expectedEndMs: 10_000 }],
    // b needs both h1 cards (placement host); h2-0 is outside its reservation
    waiting: [block('b', 2, 60_000), block('other-host', 1, 600_000)],
  });
  assert.deepEqual(
    d.grants.map((g) => g.key),
    ['other-host'],
  );
  assert.deepEqual(
    d.grants[0]!.cards.map((c) => c.id),
    ['h2-0'],
  );
});

test('simulated: backfill never delays the oldest waiting block', () => {
  let seed = 7;
  const rnd = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  for (let trial = 0; trial < 300; trial++) {
    const all = [...cards('h1', 4), ...cards('h2', 2)];
    const waiting = Array.from({ length: 6 }, (_, i) =>
      block(`w${i}`, 1 + Math.floor(rnd() * 4), 1000 + Math.floor(rnd() * 20_000)),
    );
    const running = [{ key: 'r0', cards: ['h1-0', 'h1-1'], expectedEndMs: 1000 + Math.floor(rnd() * 10_000) }];
    const startOfOldest = (withBackfill: boolean) =>
      simulate({ cards: all, running, waiting, now: 0, busy: new Set() }, withBackfill);
    assert.ok(
      startOfOldest(true) <= startOfOldest(false),
      `trial ${trial}: oldest starts at ${startOfOldest(true)} with backfill, ${startOfOldest(false)} without`,
    );
  }
});

/** Start time of the first waiting block when decisions are executed to completion. */
function simulate(input: Omit<GrantInput, 'busy'> & { busy: Set<string> }, withBackfill: boolean): number {
  let now = input.now;
  let running = [...input.running];
  let waiting = [...input.waiting];
  const oldest = waiting[0]!.key;
  for (let step = 0; step < 100; step++) {
    const busy = new Set(running.flatMap((r) => r.cards));
    const queue = withBackfill ? waiting : waiting.slice(0, 1);
    const d = planGrants({ now, cards: input.cards, busy, running, waiting: queue });
    for (const g of d.grants) {
      if (g.key === oldest) return now;
      const w = waiting.find((x) => x.key === g.key)!;
      running.push({ key: g.key, cards: g.cards.map((c) => c.id), expectedEndMs: now + w.expectedMs });
      waiting = waiting.filter((x) => x.key !== g.key);
    }
    if (running.length === 0) return Number.POSITIVE_INFINITY;
    now = Math.min(...running.map((r) => r.expectedEndMs));
    running = running.filter((r) => r.expectedEndMs > now);
  }
  return Number.POSITIVE_INFINITY;
}

test('placement host stays on one host; spread takes one host when it can, else the fewest hosts, fullest first', () => {
  const free = [...cards('h1', 2), ...cards('h2', 3)];
  assert.equal(fitGang(block('x', 4), free), null);
  assert.deepEqual(
    fitGang(block('x', 4, 1, { placement: 'spread' }), free)!.map((c) => c.id),
    ['h2-0', 'h2-1', 'h2-2', 'h1-0'],
  );
  // host placement falls back to spread only when the spec allows it
  assert.deepEqual(
    fitGang(block('x', 4, 1, { spreadFallback: true }), free)!.map((c) => c.host),
    ['h2', 'h2', 'h2', 'h1'],
  );
  assert.deepEqual(
    fitGang(block('x', 2, 1, { placement: 'spread' }), free)!.map((c) => c.host),
    ['h1', 'h1'],
  );
  // best fit: the smallest host that holds the gang
  assert.deepEqual(
    fitGang(block('y', 2), [...cards('big', 4), ...cards('small', 2)])!.map((c) => c.host),
    ['small', 'small'],
  );
});

test('a spread gang that no set of hosts can hold names the largest possible gang', () => {
  const all = [...cards('h1', 2), ...cards('h2', 4)];
  assert.equal(
    neverFits(block('x', 8, 1, { placement: 'spread' }), all),
    'needs 8 cards across hosts; the largest possible gang is 6 (h2: 4, h1: 2)',
  );
  assert.equal(neverFits(block('x', 6, 1, { placement: 'spread' }), all), null);
});

test('a gang never mixes versions: the planner refuses, and the reason says so', () => {
  const v = (cs: CardSlot[], version: string) => cs.map((c) => ({ ...c, version }));
  const all = [...v(cards('h1', 2), 'orch 1.0 abc; graphrt 1'), ...v(cards('h2', 2), 'orch 1.1 def; graphrt 1')];
  assert.equal(fitGang(block('x', 4, 1, { placement: 'spread' }), all), null);
  assert.match(
    neverFits(block('x', 4, 1, { placement: 'spread' }), all)!,
    /largest possible gang is 2 .*never mixes versions \(h1 at orch 1\.0 abc; graphrt 1; h2 at orch 1\.1 def; graphrt 1\)/,
  );
  const same = [...v(cards('h1', 2), 'orch 1.0 abc; graphrt 1'), ...v(cards('h2', 2), 'orch 1.0 abc; graphrt 1')];
  assert.equal(fitGang(block('x', 4, 1, { placement: 'spread' }), same)!.length, 4);
});

test('a block no host can ever hold names the largest host and takes no reservation', () => {
  const all = [...cards('h1', 2), ...cards('h2', 4)];
  assert.equal(neverFits(block('x', 8), all), 'needs 8 cards on one host; the largest host, h2, has 4');
  assert.match(
    neverFits(block('x', 1, 1, { backend: 'cuda' }), cards('h1', 2, 'cpu'))!,
    /no cuda card is registered \(cards: 2 cpu@h1\)/,
  );
  const d = planGrants({
    now: 0,
    cards: all,
    busy: new Set(),
    running: [],
    waiting: [block('huge', 8), block('ok', 1)],
  });
  assert.deepEqual(
    d.grants.map((g) => g.key),
    ['ok'],
  );
  assert.match(d.why.get('huge')!, /largest host, h2, has 4/);
});

test('queue order: priority first, then submission order, then block index', () => {
  const q = [
    { id: 'old-b1', priority: 0, seq: 1, block: 1 },
    { id: 'new-urgent-b0', priority: 5, seq: 3, block: 0 },
    { id: 'old-b0', priority: 0, seq: 1, block: 0 },
    { id: 'mid-b0', priority: 0, seq: 2, block: 0 },
    { id: 'low-b0', priority: -1, seq: 0, block: 0 },
  ];
  assert.deepEqual(
    [...q].sort(compareQueued).map((x) => x.id),
    ['new-urgent-b0', 'old-b0', 'old-b1', 'mid-b0', 'low-b0'],
  );
});

test("a card's allocation end: a block that would outlast it goes to a card that lasts, or waits saying why", () => {
  const ending = (host: string, n: number, until: number) => cards(host, n).map((c) => ({ ...c, until }));
  // h1's allocation leaves 30 s, h2's 10 min: the 60 s block goes to h2, the 5 s one to h1
  const d = planGrants({
    now: 1_000,
    cards: [...ending('h1', 1, 31_000), ...ending('h2', 1, 601_000)],
    busy: new Set(),
    running: [],
    waiting: [block('long', 1, 60_000), block('short', 1, 5_000)],
  });
  assert.deepEqual(
    d.grants.map((g) => [g.key, g.cards[0]!.host]),
    [
      ['long', 'h2'],
      ['short', 'h1'],
    ],
  );
  // no card lasts long enough: the block waits with the ends named and takes no reservation, so a short one behind it runs
  const e = planGrants({
    now: 1_000,
    cards: ending('h1', 2, 31_000),
    busy: new Set(),
    running: [],
    waiting: [block('long', 1, 60_000), block('short', 1, 5_000)],
  });
  assert.deepEqual(
    e.grants.map((g) => g.key),
    ['short'],
  );
  assert.match(e.why.get('long')!, /expected to take 60 s, longer than the allocations left .*h1 in 30 s/);
  // a card without an end takes any block
  const f = planGrants({
    now: 1_000,
    cards: [...ending('h1', 1, 31_000), ...cards('h3', 1)],
    busy: new Set(),
    running: [],
    waiting: [block('long', 1, 60_000)],
  });
  assert.deepEqual(
    f.grants.map((g) => g.cards[0]!.host),
    ['h3'],
  );
});
