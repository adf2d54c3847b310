/**
 * A process started in the host phase may wait in another card's slot than the one whose rank
 * adopts it (worker/command/prepared-slots.ts take: the build phase prepares before the scheduler
 * picks cards). Its failures named the card of the slot, so a committed failed rep's reason said
 * "rank 0 on card B" of a rank that ran on card A. At `open` it now takes the card it runs on.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { pino } from 'pino';
import type { Card } from '../../jobs/card.ts';
import { type OrchRankLine, orchRankOpen, parseOrchRankLine } from '../../jobs/orch-rank-protocol.ts';
import { RankProtocol } from '../../worker/rank-protocol.ts';

const card = (id: string): Card => ({ id, host: 'h', backend: 'cpu', index: 0, uuid: '', name: id });

test('a prepared process opened on another card than its slot names the card it ran on when it fails', async () => {
  // says `prepared`, reads its `open`, then fails in setup() without a hello
  const child = spawn(
    'sh',
    ['-c', 'echo \'{"v":1,"type":"prepared","prepare_ms":1}\'; read open; echo "setup failed" >&2; exit 3'],
    { detached: true, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  const proto = new RankProtocol<OrchRankLine>(
    child,
    { parse: parseOrchRankLine, request: () => '' },
    {
      rank: 0,
      card: card('cpu:1@h'),
      log: pino({ level: 'silent' }),
      program: 'sh',
      onLine: () => {},
      hostPhase: { open: orchRankOpen },
      exitCodesKnown: false,
    },
  );
  await proto.prepared;
  proto.open('', card('cpu:0@h'));
  const exit = await proto.exited;
  assert.equal(exit.card, 'cpu:0@h');
  await assert.rejects(proto.ready, (err: Error) => {
    assert.match(err.message, /rank 0 on card cpu:0@h/);
    assert.doesNotMatch(err.message, /cpu:1@h/);
    return true;
  });
});
