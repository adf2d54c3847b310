// /metrics' reason codes for waiting blocks, from the sentences the grant planner itself writes
// (planGrants on cards and queues made to produce each): every sentence maps to its code, none
// to `other`. A planner sentence reworded past its pattern shows up here, not as a silent
// `other` on a dashboard.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitReasonCode } from '../../orchestrator/dashboard/wait-reason-code.ts';
import { HELD_FOR_SIZING } from '../../orchestrator/scheduler/auto-block-sizing.ts';
import { type CardSlot, planGrants, type WaitingBlock } from '../../orchestrator/scheduler/grant-planner.ts';

const card = (host: string, index: number): CardSlot => ({ id: `cpu:${index}@${host}`, host, backend: 'cpu', index });
const block = (key: string, ranks: number, over: Partial<WaitingBlock> = {}): WaitingBlock => ({
  key,
  ranks,
  backend: 'cpu',
  placement: 'host',
  expectedMs: 60_000,
  ...over,
});

/** The reason the planner gives `key` on `cards`, with `busy` held by a block ending in a minute. */
function why(cards: CardSlot[], busy: string[], waiting: WaitingBlock[], key: string): string {
  const now = 1_000_000;
  const decision = planGrants({
    now,
    cards,
    busy: new Set(busy),
    running: busy.length > 0 ? [{ key: 'r.b0', cards: busy, expectedEndMs: now + 60_000 }] : [],
    waiting,
  });
  const reason = decision.why.get(key);
  assert.ok(reason, `the planner gave ${key} a reason: ${JSON.stringify([...decision.why])}`);
  return reason;
}

test('each planner sentence for a waiting block maps to its reason code', () => {
  const two = [card('h1', 0), card('h1', 1)];
  const cases: [string, string][] = [
    [why([], [], [block('a.b0', 1)], 'a.b0'), 'no-cards'],
    [why([{ ...card('h1', 0), backend: 'cuda' }], [], [block('a.b0', 1)], 'a.b0'), 'no-cards'],
    [why(two, [], [block('a.b0', 4)], 'a.b0'), 'never-fits'],
    [
      why(
        two,
        [],
        [block('a.b0', 1, { hosts: new Set(['h2']), hostsWhy: 'waiting for its builds (building on h2 (attempt 1))' })],
        'a.b0',
      ),
      'builds',
    ],
    [why(two, ['cpu:0@h1', 'cpu:1@h1'], [block('a.b0', 1)], 'a.b0'), 'cards-busy'],
    // the oldest needs both cards, one is busy: the younger one-card block fits the free one but would delay it
    [why(two, ['cpu:0@h1'], [block('a.b0', 2), block('b.b0', 1, { expectedMs: 120_000 })], 'b.b0'), 'behind-older'],
  ];
  for (const [sentence, code] of cases) assert.equal(waitReasonCode(sentence), code, sentence);
  assert.equal(waitReasonCode(null), 'not-planned');
  assert.equal(waitReasonCode('queued (no grant pass yet: is orch serve running?)'), 'not-planned');
  // the sentence the grant pass writes on an auto-sized experiment's held blocks (grant-apply.ts noteHeld)
  assert.equal(waitReasonCode(HELD_FOR_SIZING), 'sizing');
  assert.equal(waitReasonCode('a sentence nobody writes'), 'other');
});
