/**
 * report.md's Capture blockers section shows a program's capture-failure message and source file
 * as text, never as Markdown or terminal escapes: a failure record planted in a real redis-server
 * (anyone who reaches Redis writes one) whose message carries an image that calls out, a link,
 * raw HTML, a backtick that would end a code span, ESC, BEL and OSC 52, and whose frame's file
 * carries backticks, read back through ResultStore and the analysis's captureBlockers into
 * captureBlockersSection. Each shows as inline code (orchestrator/report/markdown-code.ts) with its
 * controls visible; outside the code spans nothing but the section's own words is left.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CAPTURE_FAILED_PREFIX } from '../../jobs/capture-blocker.ts';
import { captureBlockersSection } from '../../orchestrator/report/capture-blockers-section.ts';
import { markdownCode, markdownText } from '../../orchestrator/report/markdown-code.ts';
import { renderMarkdown } from '../../orchestrator/report/render-markdown.ts';
import { analyzeExperiment, captureBlockers } from '../../orchestrator/stats/analyze.ts';
import { orchKeys } from '../../store/keys.ts';
import { ResultStore } from '../../store/result-store.ts';
import { abWithAa } from '../stats/fixtures.ts';
import { assertInert } from '../utils/inert-text.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';

const MESSAGE =
  'boom ![x](https://attacker/p.png) [click](https://attacker/) <img src=x onerror=alert(1)> `a`` end \x1b[2J\x07\x1b]52;c;Y3VybA==\x07';
const FILE = '/x/``evil`.py';

/** Markup that would render (an image, a link, raw HTML) where no backslash stops it. */
const LIVE_MARKUP = /(?<!\\)!(?<!\\)\[|(?<!\\)\[[^\]]*(?<!\\)\]\(|(?<!\\)<[a-z/]/i;

/** `line` with its inline code spans taken out (CommonMark: a run of n backticks ends at the next run of exactly n). */
function outsideCode(line: string): string {
  let out = '';
  let at = 0;
  while (at < line.length) {
    const open = /`+/g;
    open.lastIndex = at;
    const m = open.exec(line);
    if (m === null) break;
    const close = new RegExp(`(?<!\`)${m[0]}(?!\`)`, 'g');
    close.lastIndex = m.index + m[0].length;
    const end = close.exec(line);
    if (end === null) break;
    out += `${line.slice(at, m.index)}[code]`;
    at = end.index + end[0].length;
  }
  return out + line.slice(at);
}

const r = privateRedis();

describe('Capture blockers in report.md', () => {
  it('a planted failure record: message and file as inline code, escaped; no markup outside the code', async () => {
    const prefix = freshPrefix('cb');
    const failed = {
      block: 0,
      arm: 'graph',
      rep: 0,
      position: 0,
      attempt: 1,
      reason: `${CAPTURE_FAILED_PREFIX}${MESSAGE} (at ${FILE}:7)`,
      other_blockers: [{ message: '<script>x</script> ![y](http://a/b.png)', frame: null }],
    };
    await r.redis.hset(orchKeys(prefix).failed('e1'), '0/graph/0', JSON.stringify(failed));
    const records = Object.values(await new ResultStore(r.redis, { prefix }).failed('e1'));
    const section = captureBlockersSection({ capture_blockers: captureBlockers(records) });
    const text = section.join('\n');
    assertInert(text);
    const items = section.filter((l) => l.startsWith('- arm '));
    assert.deepEqual(items, [
      `- arm graph at \`\`\`/x/\`\`evil\`.py:7\`\`\`: \`\`\`boom ![x](https://attacker/p.png) [click](https://attacker/) <img src=x onerror=alert(1)> \`a\`\` end \\x1b[2J\\x07\\x1b]52;c;Y3VybA==\\x07\`\`\``,
      '- arm graph: `<script>x</script> ![y](http://a/b.png)`',
    ]);
    for (const item of items) assert.match(outsideCode(item), /^- arm graph( at \[code\])?: \[code\]$/, item);
  });

  it("a comparison's reason and the report's other prose quote the blocker as text: every markup character escaped", () => {
    const ab = abWithAa(21);
    const failed = ab.reps
      .filter((rep) => rep.arm === 'B')
      .map((rep) => ({ ...rep, attempt: 1, reason: `${CAPTURE_FAILED_PREFIX}${MESSAGE} (at ${FILE}:7)` }));
    const a = analyzeExperiment({ ...ab, reps: ab.reps.filter((rep) => rep.arm !== 'B'), failed });
    const md = renderMarkdown(a);
    const reasonLine = md.split('\n').find((l) => l.startsWith('- B vs A: not testable'));
    assert.ok(reasonLine, md);
    assert.ok(reasonLine.includes(markdownText('![x](https://attacker/p.png)')), reasonLine);
    // outside the Capture blockers section's code spans no line of the report renders markup
    for (const line of md.split('\n')) assert.doesNotMatch(outsideCode(line), LIVE_MARKUP, line);
    assert.equal(markdownText('a ![i](u) <b> *e* \\[x] \\<'), 'a !\\[i\\](u) \\<b> *e* \\\\\\[x\\] \\\\\\<');
  });

  it('a code span no text can end: the fence outgrows its backticks, an edge backtick is padded', () => {
    assert.equal(markdownCode('plain'), '`plain`');
    assert.equal(markdownCode('a ``` b'), '````a ``` b````');
    assert.equal(markdownCode('`x'), '`` `x ``');
    assert.equal(markdownCode(' x '), '`  x  `');
    for (const s of ['a`b', '``', '` `', 'x ![i](u) `y`']) assert.equal(outsideCode(markdownCode(s)), '[code]', s);
  });
});
