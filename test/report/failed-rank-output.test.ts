/**
 * The last lines of a failed rank (jobs/rank-output-tail.ts): a command that prints 30 lines on
 * each stream and exits 1 leaves lines 11..30 of each, in order, in report.md's "Output of failed
 * ranks", on `orch submit`'s stderr at its end and in `orch report --from`'s rebuilt report — read
 * from the failure's record, not from the event stream; a resident program whose setup raises
 * leaves its traceback's end there. The record is bounded: 20 lines a stream,
 * each line escaped and cut, and at most RANK_OUTPUT_RECORDS_MAX records per experiment in Redis.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import {
  failedBlocksOutput,
  OutputTail,
  RANK_OUTPUT_LINE_MAX_BYTES,
  RANK_OUTPUT_RECORDS_MAX,
  type RankOutputTail,
} from '../../jobs/rank-output-tail.ts';
import { failedOutputLines, failedOutputSection } from '../../orchestrator/report/failed-output-section.ts';
import { orchKeys } from '../../store/keys.ts';
import { ResultStore } from '../../store/result-store.ts';
import { runOrch } from '../cli/run-orch.ts';
import { assertInert } from '../utils/inert-text.ts';
import { LAST_KEPT, PRINTED, PRINTS_THEN_FAILS_SPEC } from '../utils/prints-then-fails-spec.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';

const RESIDENT_SPEC = `name: setup-fails
design: ab
workload:
  runtime: command
  run: { cmd: python3 ${resolve('test/fixtures/resident-setup-fails/prog.py')}, mode: resident, hello_timeout_s: 60 }
  toggles: { GRAPH: request }
  warmup: 1
  steps: 2
toggles: [GRAPH]
arms: [{ name: eager, toggles: { GRAPH: false } }, { name: graph, toggles: { GRAPH: true } }]
reps: 2
blocks: { count: 1 }
gates: { identity: false, aa: false }
`;

const r = privateRedis();

/** The numbers of `<stream> line N` in `text`, in the order they appear. */
function numbered(text: string, stream: 'out' | 'err'): number[] {
  return [...text.matchAll(new RegExp(`\\b${stream} line (\\d+)\\b`, 'g'))].map((m) => Number(m[1]));
}

describe("a failed rank's last lines", () => {
  it("report.md, submit's stderr and report --from show lines 11..30 of each stream, not 1..10", () => {
    const dir = mkdtempSync(join(tmpdir(), 'orch-tail-'));
    try {
      const file = join(dir, 'spec.yaml');
      writeFileSync(file, PRINTS_THEN_FAILS_SPEC);
      const res = runOrch(['submit', file, '--results', join(dir, 'res')], {
        REDIS_URL: '',
        ORCH_PREFIX: '',
        ORCH_LOG: 'silent',
        ORCH_CPU_CARDS: '1',
      });
      const [id] = readdirSync(join(dir, 'res'));
      assert.ok(id, res.stderr.slice(0, 2000));
      const md = readFileSync(join(dir, 'res', id, 'report.md'), 'utf8');
      const section = md.split('## Output of failed ranks')[1]?.split('\n## ')[0] ?? '';
      console.log(section);
      assert.match(section, /### block 0, rank 0 \(card `cpu:0@\S+` on `\S+`, attempt \d+\)/);
      assert.deepEqual(numbered(section, 'out'), LAST_KEPT);
      assert.deepEqual(numbered(section, 'err'), LAST_KEPT);
      // on the terminal, after the reason: the same lines, each marked with its stream
      const tail = res.stderr.split(/printed last:\n/)[1] ?? '';
      assert.deepEqual(numbered(tail, 'out'), LAST_KEPT, res.stderr.slice(-3000));
      assert.deepEqual(numbered(tail, 'err'), LAST_KEPT);
      assert.match(tail, /^ {2}stdout \| out line 11$/m);
      assert.match(tail, /^ {2}stderr \| err line 30$/m);
      for (const text of [md, res.stderr]) assertInert(text);
      // rebuilt from the directory alone: the section comes from the recorded analysis
      const rebuilt = runOrch(['report', '--from', join(dir, 'res', id)], { REDIS_URL: '' });
      assert.equal(rebuilt.stderr, '');
      assert.equal(readFileSync(join(dir, 'res', id, 'report.md'), 'utf8'), md);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a resident program's setup that raises: its last stderr lines, its traceback's end among them", () => {
    const dir = mkdtempSync(join(tmpdir(), 'orch-tail-resident-'));
    try {
      const file = join(dir, 'spec.yaml');
      writeFileSync(file, RESIDENT_SPEC);
      const res = runOrch(['submit', file, '--results', join(dir, 'res')], {
        REDIS_URL: '',
        ORCH_PREFIX: '',
        ORCH_LOG: 'silent',
        ORCH_CPU_CARDS: '1',
        PYTHONDONTWRITEBYTECODE: '1',
      });
      const [id] = readdirSync(join(dir, 'res'));
      assert.ok(id, res.stderr.slice(0, 2000));
      const md = readFileSync(join(dir, 'res', id, 'report.md'), 'utf8');
      const section = md.split('## Output of failed ranks')[1]?.split('\n## ')[0] ?? '';
      for (const text of [section, res.stderr.split(/printed last:\n/)[1] ?? '']) {
        assert.match(text, /RuntimeError: no weights file: \/nonexistent\/model\.bin/, text);
        assert.match(text, /\bsetup line 30\b/);
        assert.doesNotMatch(text, /\bsetup line 1\b/, 'the first lines are not the ones kept');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps 20 lines a stream, each escaped and cut', () => {
    const tail = new OutputTail();
    for (let i = 1; i <= PRINTED; i++) tail.push('stdout', `line ${i}`);
    tail.push('stderr', `\x1b[2J${'x'.repeat(10 * RANK_OUTPUT_LINE_MAX_BYTES)}`);
    const { stdout, stderr } = tail.output();
    assert.deepEqual(
      stdout,
      LAST_KEPT.map((n) => `line ${n}`),
    );
    assert.equal(stderr.length, 1);
    assert.ok(Buffer.byteLength(stderr[0]!) <= RANK_OUTPUT_LINE_MAX_BYTES, `${Buffer.byteLength(stderr[0]!)} bytes`);
    assert.match(stderr[0]!, /^\\x1b\[2J/);
    tail.clear();
    assert.deepEqual(tail.output(), { stdout: [], stderr: [] });
  });

  it("a report shows the failed blocks' latest failed attempt, rank by rank", () => {
    const t = (block: number, attempt: number, rank: number): RankOutputTail => ({
      block,
      attempt,
      rank,
      card: `c${rank}`,
      host: 'h',
      stdout: [`b${block} a${attempt} r${rank}`],
      stderr: [],
    });
    const shown = failedBlocksOutput([t(0, 2, 1), t(0, 1, 0), t(0, 2, 0), t(1, 1, 0), t(2, 3, 0)], new Set([0, 2]));
    assert.deepEqual(
      shown.map((s) => s.stdout[0]),
      ['b0 a2 r0', 'b0 a2 r1', 'b2 a3 r0'],
      'block 1 committed after its failure; block 0 attempt 1 is said again by attempt 2',
    );
  });

  it('a record planted in Redis (anyone may write it) is shown escaped: its lines, card and host', async () => {
    const prefix = freshPrefix('planted');
    const planted = {
      block: 0,
      attempt: 1,
      rank: 0,
      card: 'cpu:0\x1b[2J',
      host: 'h\x1b]0;owned\x07',
      stdout: ['\x1b]0;x\x07\x1b[2J\x1b[32mall gates passed', '::error::pwned'],
      stderr: ['\x1b]52;c;Y3VybCBldmlsfHNo\x07', 'ok \u009b31m\u202eevil'],
    };
    await r.redis.hset(orchKeys(prefix).rankOutput('e1'), '0/1/0', JSON.stringify(planted));
    const records = Object.values(await new ResultStore(r.redis, { prefix }).rankOutputs('e1'));
    const a = { failed_rank_output: failedBlocksOutput(records, new Set([0])) };
    const shown = [failedOutputSection(a).join('\n'), failedOutputLines(a).join('\n')];
    for (const text of shown) {
      assertInert(text);
      assert.ok(text.includes('\\x1b]0;x\\x07\\x1b[2J\\x1b[32mall gates passed'), text);
      assert.ok(text.includes('\\x1b]52;c;Y3VybCBldmlsfHNo\\x07'), text);
      assert.ok(text.includes('\\x3a:error::pwned'), text);
    }
    assert.ok(shown[0]!.includes('card `cpu:0\\x1b[2J` on `h\\x1b]0;owned\\x07`'), shown[0]);
    assert.ok(shown[1]!.includes('card cpu:0\\x1b[2J on h\\x1b]0;owned\\x07'), shown[1]);
    // a worker's own record reads back as it was written: escaping its escaped lines changes nothing
    const tail = new OutputTail();
    for (const l of planted.stdout) tail.push('stdout', l);
    const honest = { ...planted, card: 'cpu:0', host: 'h', ...tail.output(), block: 1 };
    await r.redis.hset(orchKeys(prefix).rankOutput('e1'), '1/1/0', JSON.stringify(honest));
    const read = (await new ResultStore(r.redis, { prefix }).rankOutputs('e1'))['1/1/0'];
    assert.deepEqual(read, honest);
  });

  it("report.md's heading of a failed rank shows a registered card or host name as code, never as Markdown", () => {
    const image = '![x](https://attacker.example/p.png)';
    const a = {
      failed_rank_output: [
        { block: 0, attempt: 1, rank: 0, card: `[c](https://x.example)`, host: image, stdout: ['x'], stderr: [] },
      ],
    };
    const heading = failedOutputSection(a).find((l) => l.startsWith('### '));
    assert.equal(heading, `### block 0, rank 0 (card \`[c](https://x.example)\` on \`${image}\`, attempt 1)`);
  });

  it('Redis keeps at most RANK_OUTPUT_RECORDS_MAX records of an experiment', async () => {
    const prefix = freshPrefix('tail');
    const keys = orchKeys(prefix);
    await r.redis.hset(keys.exp('e1'), { state: 'running' });
    const store = new ResultStore(r.redis, { prefix });
    const blocks = RANK_OUTPUT_RECORDS_MAX + 5;
    for (let block = 0; block < blocks; block++) {
      const out: RankOutputTail = { block, attempt: 1, rank: 0, card: 'c', host: 'h', stdout: ['x'], stderr: ['y'] };
      const rep = { block, arm: 'a', rep: 0, position: 0, reason: 'exited 1' };
      assert.equal(await store.failReps('e1', block, 1, [rep], [out]), 1, 'the rep is recorded, whatever the bound');
    }
    assert.equal(await r.redis.hlen(keys.failed('e1')), blocks);
    const kept = Object.values(await store.rankOutputs('e1'));
    assert.equal(kept.length, RANK_OUTPUT_RECORDS_MAX);
    assert.deepEqual(
      kept.map((k) => k.block).sort((a, b) => a - b),
      [...Array(RANK_OUTPUT_RECORDS_MAX).keys()],
    );
  });
});
