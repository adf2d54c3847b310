/**
 * A protocol fault quotes what the rank printed, and the fault's message goes to the terminal (the
 * pretty log, `orch submit`'s output), the log and Redis: the quote is data, escaped
 * (jobs/rank-text.ts), never the rank's own escape sequences. Real parse functions, and a real
 * rank process (a node script speaking the orch-rank protocol) through RankProtocol: a non-JSON
 * stdout line that clears the screen and prints a fake verdict, a line of another request whose
 * id and arm carry C1 controls and a bidi override (JSON lets them through unescaped), a line over
 * the limit starting with an OSC 52 clipboard write, and a line whose `type` carries ESC.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import { z } from 'zod';
import type { Card } from '../../jobs/card.ts';
import { parseGraphrtLine } from '../../jobs/graphrt-protocol.ts';
import { type OrchRankLine, parseOrchRankLine } from '../../jobs/orch-rank-protocol.ts';
import { parseStored } from '../../jobs/parse-stored.ts';
import { RankProtocol } from '../../worker/rank-protocol.ts';
import { armOf, RankProtocolError } from '../../worker/rank-runner.ts';
import { blockJob } from '../utils/block-jobs.ts';
import { assertInert } from '../utils/inert-text.ts';

/** Sets the window title, clears the screen and prints a verdict in green. */
const SCREEN = '\x1b]0;x\x07\x1b[2J\x1b[32mall gates passed';
/** Writes the operator's clipboard (OSC 52). */
const CLIPBOARD = '\x1b]52;c;Y3VybCBldmlsfHNo\x07';
/** What JSON carries raw: an 8-bit CSI and a right-to-left override. */
const C1 = '\u009b2J\u202egnp.exe';

function messageOf(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    return (err as Error).message;
  }
  assert.fail('no error');
}

describe('a rank line quoted in an error', () => {
  test('parseOrchRankLine: a non-JSON stdout line is quoted escaped', () => {
    const m = messageOf(() => parseOrchRankLine(SCREEN));
    assertInert(m);
    assert.ok(m.includes('\\x1b]0;x\\x07\\x1b[2J\\x1b[32mall gates passed'), m);
  });

  test("parseOrchRankLine: a line's type and keys, named by its schema issues, are escaped", () => {
    const m = messageOf(() => parseOrchRankLine(JSON.stringify({ v: 1, type: SCREEN, [CLIPBOARD]: 1 })));
    assertInert(m);
    assert.ok(m.includes('\\x1b[2J'), m);
  });

  test('parseGraphrtLine and a stored record: the quoted line is escaped', () => {
    for (const m of [
      messageOf(() => parseGraphrtLine(SCREEN)),
      messageOf(() => parseStored(z.object({ a: z.number() }), SCREEN, 'orch:x')),
      messageOf(() => parseStored(z.object({ a: z.number() }), JSON.stringify({ a: C1 }), 'orch:x')),
    ]) {
      assertInert(m);
      assert.match(m, /\\x1b\]0;x|\\u009b2J\\u202e/, m);
    }
  });
});

const card: Card = { id: 'cpu:0@hp', host: 'hp', backend: 'cpu', index: 0, uuid: 'cpu:0@hp', name: 'cpu' };
const job = blockJob({ experiment: 'hp', block: 0, attempt: 1, epoch: 1, host: 'hp', cards: [card.id] });

/** A program that says hello, then answers its first request with `answer` (a line of JS evaluated there). */
const PROGRAM = `
const out = (s) => process.stdout.write(s + '\\n');
out(JSON.stringify({ v: 1, type: 'hello', protocol: 'orch-rank', version: 1, name: 'h', library: 'l', backend: 'cpu',
  device: 'cpu', pid: process.pid, timing: 'host-clock', hash: 'h', toggles: [], outputs: ['y'], final: true }));
process.stdin.once('data', () => out(eval(process.env.ANSWER)));
setInterval(() => {}, 1000);
`;

/** The fault the rank's answer to its first request is. */
async function faultOf(answer: string): Promise<string> {
  const child = spawn(process.execPath, ['-e', PROGRAM], {
    detached: true,
    stdio: 'pipe',
    env: { PATH: process.env.PATH ?? '', ANSWER: answer },
  });
  const p = new RankProtocol<OrchRankLine>(
    child,
    { parse: parseOrchRankLine, request: (op) => JSON.stringify({ v: 1, id: op.id, op: op.op }) },
    { rank: 0, card, log: pino({ level: 'silent' }), onLine: () => {}, program: 'hostile' },
  );
  await p.ready;
  const err = await p.request({ id: 'r0', op: 'rep', arm: armOf(job, 'A') }, 20_000).then(
    () => null,
    (e: unknown) => e,
  );
  await p.exited;
  assert.ok(err instanceof RankProtocolError, String(err));
  return err.message;
}

describe('RankProtocol: the fault of a hostile rank line', () => {
  test('a non-JSON stdout line: its escape sequences quoted visible', async () => {
    const m = await faultOf(`${JSON.stringify(SCREEN)}`);
    assertInert(m);
    assert.ok(m.includes('\\x1b[2J\\x1b[32mall gates passed'), m);
  });

  test('a line of another request: its id, arm and the line quoted visible', async () => {
    const line = {
      v: 1,
      type: 'trace',
      id: C1,
      arm: C1,
      mode: 'eager',
      trace: { source: 'none', reason: 'r' },
      t_start_ns: 0,
      t_end_ns: 0,
      final: true,
    };
    const m = await faultOf(`JSON.stringify(${JSON.stringify(line)})`);
    assertInert(m);
    assert.match(m, /id \\u009b2J\\u202egnp\.exe, arm \\u009b2J\\u202egnp\.exe with request r0/, m);
  });

  test('a line over the limit: its head quoted visible', async () => {
    const m = await faultOf(`${JSON.stringify(CLIPBOARD)} + 'x'.repeat(2 * 1024 * 1024)`);
    assertInert(m);
    assert.ok(m.includes('starting: \\x1b]52;c;Y3VybCBldmlsfHNo\\x07xxx'), m);
  });
});
