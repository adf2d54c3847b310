// Log lines on stderr: a person at a terminal (or ORCH_LOG_FORMAT=pretty) gets one line per
// problem with the error's code and message and no stack; a pipe (or ORCH_LOG_FORMAT=json) gets
// pino's JSON lines. Real child processes logging through cli/embedded/log.ts.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

const CODE = `
import { orchLog } from './cli/embedded/log.ts';
import { UserInputError } from './jobs/errors.ts';
const log = orchLog('worker', process.env.TEST_LOG_LEVEL ?? 'info');
log.error({ err: new UserInputError('BAD_PARAM', 'params.hidden: 4096 is above 1024'), block: 3 }, 'block attempt failed; ranks killed');
`;

function logOf(format: string | undefined, level = 'info'): string[] {
  const env: NodeJS.ProcessEnv = { ...process.env, TEST_LOG_LEVEL: level };
  delete env.ORCH_LOG_FORMAT;
  if (format !== undefined) env.ORCH_LOG_FORMAT = format;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CODE], {
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
