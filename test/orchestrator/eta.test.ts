// Queue and progress estimates (orchestrator/experiment/eta.ts, orchestrator/scheduler/): from
// the reps the experiment measured and the reps it has left, the step history standing in before
// the first measured rep, "unknown" with neither; the scheduler's waiting reason says a guess is
// none. A fixed 5 ms per step with progress ignored said "~0 s" for blocks with minutes left.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SpecSchema } from '../../jobs/spec.ts';
import { ETA_WINDOW, estimateRemaining, formatEta, RepClock } from '../../orchestrator/experiment/eta.ts';
import { historyRepMs } from '../../orchestrator/scheduler/expected-duration.ts';
import { type CardSlot, planGrants } from '../../orchestrator/scheduler/grant-planner.ts';

// planted: a block of 12 reps whose reps take 2 s, then 4 s (the card slowed), on the worker's clock
const PLANTED = [...Array(6).fill(2000), ...Array(5).fill(4000)] as number[];

function clockOf(gaps: number[], block = 0, start = 1_000_000): RepClock {
  const c = new RepClock();
  let t = start;
  let done = 1;
  c.observe(block, 1, done, t);
  for (const g of gaps) {
    t += g;
    c.observe(block, 1, ++done, t);
  }
  return c;
}

test('the time left: the mean of the measured rep times × the reps left, spread over the blocks running', () => {
  const clock = clockOf(PLANTED);
  assert.deepEqual(clock.measured(), PLANTED, 'one rep time per gap between consecutive rep answers of an attempt');
  const mean = PLANTED.reduce((a, b) => a + b, 0) / PLANTED.length;
  const eta = estimateRemaining({ repsLeft: 10, parallel: 2, repMs: clock.measured(), historyRepMs: null })!;
  assert.equal(eta.basis, 'measured');
  assert.ok(Math.abs(eta.ms - (mean * 10) / 2) < 1e-9, String(eta.ms));
  // progress made: fewer reps left, less time left, in proportion
  const later = estimateRemaining({ repsLeft: 5, parallel: 2, repMs: clock.measured(), historyRepMs: null })!;
  assert.ok(Math.abs(later.ms - eta.ms / 2) < 1e-9);
  assert.equal(
    estimateRemaining({ repsLeft: 0, parallel: 1, repMs: [], historyRepMs: null })!.ms,
    0,
    'nothing left: no time left',
  );
});

test('only the latest ETA_WINDOW rep times count: a card that slowed down moves the estimate', () => {
  const gaps = [...Array(ETA_WINDOW).fill(1000), ...Array(ETA_WINDOW).fill(3000)] as number[];
  const eta = estimateRemaining({ repsLeft: 4, parallel: 1, repMs: clockOf(gaps).measured(), historyRepMs: null })!;
  assert.equal(eta.ms, 4 * 3000);
  assert.equal(eta.reps, 2 * ETA_WINDOW);
});

test('the reps of two attempts and two blocks are timed apart: the gap between blocks is no rep', () => {
  const c = new RepClock();
  c.observe(0, 1, 1, 1000);
  c.observe(1, 1, 1, 1100);
  c.observe(0, 1, 2, 3000);
  c.observe(1, 1, 2, 3100);
  c.observe(0, 2, 1, 90_000);
  c.observe(0, 2, 2, 92_000);
  assert.deepEqual(c.measured(), [2000, 2000, 2000]);
});

test('reps counted between two looks share the time between them; a look with nothing new adds no rep', () => {
  const c = new RepClock();
  c.observe(0, 1, 1, 1000);
  c.observe(0, 1, 1, 1500);
  c.observe(0, 1, 4, 7000);
  assert.deepEqual(c.measured(), [2000, 2000, 2000]);
});

test('before any rep: the step history stands in; with none, unknown, never a guess', () => {
  const spec = SpecSchema.parse({
    name: 'x',
    design: 'ab',
    workload: { runtime: 'native', kind: 'chain', warmup: 2, steps: 8 },
    toggles: ['graph'],
    arms: [
      { name: 'a', toggles: {} },
      { name: 'b', toggles: { graph: true } },
    ],
  });
  const history = historyRepMs(spec, { ms_per_step: 3, n: 800 })!;
  assert.deepEqual(history, { ms: 30, reps: 100 }, 'ms per step × (warmup + steps); steps folded / steps per rep');
  const fromHistory = estimateRemaining({ repsLeft: 40, parallel: 1, repMs: [], historyRepMs: history })!;
  assert.deepEqual(fromHistory, { ms: 1200, basis: 'history', reps: 100 });
  assert.equal(estimateRemaining({ repsLeft: 40, parallel: 1, repMs: [], historyRepMs: null }), null);
  assert.equal(formatEta(null), 'ETA unknown (no rep yet)');
  assert.equal(formatEta(fromHistory), "ETA ~1 s (from the workload's history, 100 reps)");
  assert.equal(
    formatEta(estimateRemaining({ repsLeft: 10, parallel: 1, repMs: PLANTED, historyRepMs: history })),
    'ETA ~29 s (from 11 reps)',
  );
  assert.equal(historyRepMs(spec, null), null);
});

test("the scheduler's waiting reason: a holder's end from measured step times, 'unknown' for a guess, never '~0 s' past it", () => {
  const cards: CardSlot[] = [{ id: 'h-0', host: 'h', backend: 'cpu', index: 0 }];
  const why = (running: { expectedEndMs: number; known?: boolean }) =>
    planGrants({
      now: 100_000,
      cards,
      busy: new Set(['h-0']),
      running: [{ key: 'e/0', cards: ['h-0'], ...running }],
      waiting: [{ key: 'f/0', ranks: 1, backend: 'auto', placement: 'host', expectedMs: 1000 }],
    }).why.get('f/0')!;
  assert.match(why({ expectedEndMs: 160_000, known: true }), /expected in ~60 s \(held by e\/0\)/);
  assert.match(
    why({ expectedEndMs: 160_000, known: false }),
    /held by e\/0, its end unknown \(no step time of its workload measured yet\)/,
  );
  assert.match(why({ expectedEndMs: 90_000, known: true }), /held by e\/0, past its expected end/);
  assert.doesNotMatch(why({ expectedEndMs: 90_000, known: true }), /~0 s/);
});

test('the FIFO reason of a block behind the head: its own duration only when measured', () => {
  const cards: CardSlot[] = [0, 1].map((i) => ({ id: `h-${i}`, host: 'h', backend: 'cpu', index: i }));
  const why = (expectedKnown: boolean) =>
    planGrants({
      now: 0,
      cards,
      busy: new Set(['h-0']),
      running: [{ key: 'e/0', cards: ['h-0'], expectedEndMs: 60_000, known: true }],
      waiting: [
        { key: 'f/0', ranks: 2, backend: 'auto', placement: 'host', expectedMs: 1000 },
        { key: 'g/0', ranks: 1, backend: 'auto', placement: 'host', expectedMs: 120_000, expectedKnown },
      ],
    }).why.get('g/0')!;
  assert.match(why(true), /behind f\/0 \(FIFO: starting now would delay it; expected 120 s\)/);
  assert.match(
    why(false),
    /behind f\/0 \(FIFO: starting now would delay it; its duration unknown: no step time of its workload measured yet\)/,
  );
});
