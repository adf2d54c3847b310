/**
 * What must never reach an output from a rank (jobs/rank-text.ts): a raw control character (line
 * breaks of the output itself aside), a bidi override, a workflow command at a line's start.
 */
import assert from 'node:assert/strict';

export function assertInert(out: string): void {
  assert.doesNotMatch(
    out,
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the raw control characters are what output must never carry
    /[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u202a-\u202e\u2066-\u2069]/u,
    `raw control in ${JSON.stringify(out.slice(0, 400))}`,
  );
  for (const line of out.split('\n'))
    assert.doesNotMatch(line, /^\s*(::|##\[)/, `workflow command in ${JSON.stringify(line.slice(0, 400))}`);
}
