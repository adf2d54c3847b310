// Log lines on stderr: a person at a terminal (or ORCH_LOG_FORMAT=pretty) gets one line per
// problem with the error's code and message and no stack; a pipe (or ORCH_LOG_FORMAT=json) gets
// pino's JSON lines. Real child processes logging through cli/embedded/log.ts.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { assertInert } from '../utils/inert-text.ts';

const CODE = `
import { orchLog } from './cli/embedded/log.ts';
import { UserInputError } from './jobs/errors.ts';
const log = orchLog('worker', process.env.TEST_LOG_LEVEL ?? 'info');
log.error({ err: new UserInputError('BAD_PARAM', 'params.hidden: 4096 is above 1024'), block: 3 }, 'block attempt failed; ranks killed');
`;

function logOf(format: string | undefined, level = 'info', code = CODE): string[] {
  const env: NodeJS.ProcessEnv = { ...process.env, TEST_LOG_LEVEL: level };
  delete env.ORCH_LOG_FORMAT;
  if (format !== undefined) env.ORCH_LOG_FORMAT = format;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    env,
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(r.status, 0, r.stderr);
  return r.stderr.split('\n').filter((l) => l.trim() !== '');
}

test('ORCH_LOG_FORMAT=pretty: one line, the code and message, no stack, no JSON', () => {
  const lines = logOf('pretty');
  assert.equal(lines.length, 1, lines.join('\n'));
  assert.match(
    lines[0]!,
    /^orch worker error: block attempt failed; ranks killed \(BAD_PARAM: params\.hidden: 4096 is above 1024\) {2}block=3$/,
  );
});

test("stderr not a terminal, no ORCH_LOG_FORMAT: JSON lines, the error's code and message without a stack; json asks for the same", () => {
  for (const format of [undefined, 'json']) {
    const lines = logOf(format);
    assert.equal(lines.length, 1, lines.join('\n'));
    const rec = JSON.parse(lines[0]!) as { msg: string; err: { stack?: string; code: string; message: string } };
    assert.equal(rec.msg, 'block attempt failed; ranks killed');
    assert.equal(rec.err.code, 'BAD_PARAM');
    assert.equal(rec.err.message, 'params.hidden: 4096 is above 1024');
    assert.equal(rec.err.stack, undefined, 'a stack only with ORCH_LOG=debug');
  }
});

test('ORCH_LOG=debug: the JSON line keeps the stack', () => {
  const lines = logOf('json', 'debug');
  const rec = JSON.parse(lines[0]!) as { err: { stack: string } };
  assert.match(rec.err.stack, /\n\s+at /);
});

/**
 * A worker's log quotes ranks (a protocol fault's line, a reason) and records read back from Redis:
 * on a terminal the pretty line shows their escape sequences visible, never runs them (a title,
 * a cleared screen, a green verdict, a clipboard write, an 8-bit CSI).
 */
const HOSTILE = `
import { orchLog } from './cli/embedded/log.ts';
import { OrchError } from './jobs/errors.ts';
const log = orchLog('worker', 'info');
const screen = '\\x1b]0;x\\x07\\x1b[2J\\x1b[32mall gates passed';
log.error({ err: new OrchError('RANK_PROTOCOL', 'broke the protocol: ' + screen), reason: screen, arms: ['\\u009b2J'] }, 'failed: \\x1b]52;c;Y3VybA==\\x07');
`;

test('ORCH_LOG_FORMAT=pretty: the message, the error and the fields of a record show rank text escaped', () => {
  const lines = logOf('pretty', 'info', HOSTILE);
  const out = lines.join('\n');
  assertInert(out);
  assert.equal(lines.length, 1, out);
  assert.ok(out.includes('failed: \\x1b]52;c;Y3VybA==\\x07'), out);
  assert.ok(out.includes('(RANK_PROTOCOL: broke the protocol: \\x1b]0;x\\x07\\x1b[2J\\x1b[32mall gates passed)'), out);
  assert.ok(out.includes('reason=\\x1b]0;x\\x07\\x1b[2J'), out);
  assert.ok(out.includes('arms=["\\u009b2J"]'), out);
});
