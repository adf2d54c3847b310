/**
 * Rank text is data, and a reason is said once (issue 37 M1, M2): a command whose every rep
 * prints workflow commands, terminal escapes and a 900 kB stderr line, then exits 1
 * (test/fixtures/cmd-hostile), reaches `orch submit`'s output, its stderr log, report.md and
 * `orch status` as visible, bounded text, each distinct reason once ("12 reps failed (…): …");
 * and a 1 MiB reason on 100 reps is stored bounded in Redis.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { groupedBlockReasons } from '../../jobs/grouped-reasons.ts';
import { RANK_TEXT_MAX_BYTES } from '../../jobs/rank-text.ts';
import { renderStatus } from '../../orchestrator/experiment/cluster-status.ts';
import { stoppedLines } from '../../orchestrator/report/outcome-lines.ts';
import { orchKeys } from '../../store/keys.ts';
import { ResultStore } from '../../store/result-store.ts';
import { runOrch } from '../cli/run-orch.ts';
import { assertInert } from '../utils/inert-text.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';

const HOSTILE = '::add-mask::s3cret\n\x1b[2J\x1b]0;title\x07\n##[error]x\u009b31m';
const BIG = `${HOSTILE}${'y'.repeat(1024 * 1024)}`;

const r = privateRedis();

function spec(dir: string): string {
  return `name: hostile-reasons
design: ab
workload:
  runtime: command
  run:
    cmd: sh ${resolve('test/fixtures/cmd-hostile/hostile.sh')}
    timeout_s: 20
  toggles:
    FAST: { env: FAST, on: "1", off: "0" }
  metric_source:
    format: regex
    pattern: 'step (?<step>\\d+): (?<value>[0-9.]+)ms'
    value_group: value
    step_group: step
  warmup: 1
  steps: 2
toggles: [FAST]
arms:
  - { name: slow, toggles: { FAST: false } }
  - { name: fast, toggles: { FAST: true } }
reps: 6
blocks: { count: 1 }
gates: { identity: false, aa: false }
metric: { name: ms, better: lower }
# ${dir}
`;
}

describe('hostile rank text and repeated reasons', () => {
  it('orch submit: the output, the log and report.md show it inert, bounded and once', () => {
    const dir = mkdtempSync(join(tmpdir(), 'orch-hostile-'));
    try {
      const file = join(dir, 'spec.yaml');
      writeFileSync(file, spec(dir));
      const res = runOrch(['submit', file, '--results', join(dir, 'res')], {
        REDIS_URL: '',
        ORCH_PREFIX: '',
        ORCH_LOG: 'warn',
        ORCH_CPU_CARDS: '1',
      });
      const [id] = readdirSync(join(dir, 'res'));
      assert.ok(id, res.stderr.slice(0, 2000));
      const md = readFileSync(join(dir, 'res', id, 'report.md'), 'utf8');
      for (const text of [res.stdout, res.stderr, md]) assertInert(text);
      // the program's text is still there to read, made visible
      assert.match(md, /\\x3a:error::pwned|::error::pwned/);
      assert.match(md, /\\x1b\[2J/);
      // the one block's 12 reps failed for one reason: said once in the input section, cut
      const input = md.split('## Input')[1]?.split('\n## ')[0] ?? '';
      const lines = input.split('\n').filter((l) => l.startsWith('- '));
      assert.equal(lines.length, 1, input.slice(0, 3000));
      assert.match(lines[0]!, /^- 12 reps failed \(0\/\w+\/0, 0\/\w+\/\d, 0\/\w+\/\d, … 9 more\): /);
      // report.md's prose escapes a link's brackets (orchestrator/report/markdown-code.ts markdownText)
      assert.match(lines[0]!, / … \\\[cut: \d+ more bytes\\\]$/);
      assert.ok(Buffer.byteLength(md) < 64 * 1024, `report.md is ${Buffer.byteLength(md)} bytes`);
      assert.ok(Buffer.byteLength(res.stdout) < 64 * 1024, `submit printed ${Buffer.byteLength(res.stdout)} bytes`);
      assert.ok(statSync(join(dir, 'res', id, 'summary.json')).size < 12 * 2 * RANK_TEXT_MAX_BYTES + 64 * 1024);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a 1 MiB reason on 100 reps is stored bounded, one line per distinct reason', async () => {
    const prefix = freshPrefix('hr');
    const keys = orchKeys(prefix);
    await r.redis.hset(keys.exp('e1'), { state: 'running' });
    const store = new ResultStore(r.redis, { prefix });
    const reps = Array.from({ length: 100 }, (_, i) => ({
      block: 0,
      arm: i % 2 ? 'a' : 'b',
      rep: i >> 1,
      position: i,
      reason: BIG,
    }));
    assert.equal(await store.failReps('e1', 0, 1, reps), 100);
    const sizes = await Promise.all(reps.map((f) => r.redis.hstrlen(keys.failed('e1'), `0/${f.arm}/${f.rep}`)));
    for (const n of sizes) assert.ok(n <= RANK_TEXT_MAX_BYTES + 200, `a stored record of ${n} bytes`);
    const failed = Object.values(await store.failed('e1'));
    for (const f of failed) assertInert(f.reason);
  });

  it("orch status, report.md's outcome line and an experiment's reason escape and group it", () => {
    const reason = groupedBlockReasons([0, 1, 2].map((block) => ({ block, reason: HOSTILE })));
    assert.equal(reason.match(/add-mask/g)?.length, 1, 'three blocks, one reason, said once');
    assert.match(reason, /^blocks 0, 1, 2: /);
    const status = renderStatus({
      leader: null,
      reader: null,
      queues: {},
      cards: [],
      counts: { failed: 1 },
      not_shown: 0,
      experiments: [
        {
          id: 'e1',
          name: 'n',
          state: 'failed',
          reason: HOSTILE,
          created: '',
          measured: 0,
          planned: 2,
          uncommitted: 0,
          outcome: null,
          blocks: [{ block: 0, phase: 'failed', attempt: 1, why: null, reason: HOSTILE, cards: [] }],
        },
      ],
    });
    assertInert(status);
    assert.match(status, /\\x1b\[2J/);
    assertInert(stoppedLines({ stopped: { state: 'failed', reason: HOSTILE, user_input: false } }).join('\n'));
  });
});
