/**
 * docs/ARCHITECTURE.md's rules that a reading of the source can check, checked against the
 * production files as written:
 *   - only jobs/native-args.ts spells a graphrt flag (the flags are the ones it spells itself);
 *   - only store/event-log.ts reads a Redis stream (XRANGE, XREVRANGE, XREAD);
 *   - jobs/ runs no process (no child_process import).
 * Each rule is a function of the files' text, so the last tests plant a violation of each and
 * see it caught.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { importGraph, ROOT } from './import-graph.ts';

type Sources = Map<string, string>;

function productionSources(): Sources {
  return new Map([...importGraph().keys()].map((f) => [f, readFileSync(join(ROOT, f), 'utf8')]));
}

/** Each line of code without its comments: a comment may name a flag or a command, code may not. */
function codeLines(text: string): { line: number; code: string }[] {
  const out: { line: number; code: string }[] = [];
  let inBlock = false;
  text.split('\n').forEach((raw, i) => {
    let code = raw;
    if (inBlock) {
      const end = code.indexOf('*/');
      if (end < 0) return;
      code = code.slice(end + 2);
      inBlock = false;
    }
    code = code.replace(/\/\*.*?\*\//g, '');
    const open = code.indexOf('/*');
    if (open >= 0) {
      code = code.slice(0, open);
      inBlock = true;
    }
    // a `//` comment, not the `//` of a URL inside a string
    code = code.replace(/(^|[^:'"`])\/\/.*$/, '$1');
    if (code.trim() !== '') out.push({ line: i + 1, code });
  });
  return out;
}

const NATIVE_ARGS = 'jobs/native-args.ts';

/** The graphrt flags: every `'--flag'` literal jobs/native-args.ts spells. */
function graphrtFlags(files: Sources): string[] {
  const text = files.get(NATIVE_ARGS) ?? '';
  return [...new Set([...text.matchAll(/['"`](--[a-z][a-z-]*)['"`]/g)].map((m) => m[1]!))].sort();
}

/** Files other than jobs/native-args.ts that spell a graphrt flag as a string. */
function flagSpellers(files: Sources): string[] {
  const flags = graphrtFlags(files);
  assert.ok(flags.length >= 3, `${NATIVE_ARGS} spells the graphrt flags (found ${flags.join(', ') || 'none'})`);
  const literal = new RegExp(`['"\`](${flags.map((f) => f.replace(/-/g, '\\-')).join('|')})(?![a-z-])`);
  const out: string[] = [];
  for (const [file, text] of files) {
    if (file === NATIVE_ARGS) continue;
    for (const { line, code } of codeLines(text)) {
      const m = literal.exec(code);
      if (m) out.push(`${file}:${line} spells ${m[1]}`);
    }
  }
  return out;
}

/**
 * Readers of a Redis stream outside store/event-log.ts that are known and not yet moved, each
 * with why it is not the events record's reader. None: the dispatcher's follower of BullMQ's
 * queue events and the dashboard's wake-ups read through store/event-log.ts (lastStreamId,
 * readStreams), so a raw stream call anywhere else fails.
 */
const STREAM_READERS_KNOWN: Record<string, string> = {};

function streamReaders(files: Sources): string[] {
  const call = /\.(xread|xreadgroup|xrange|xrevrange)\s*\(|['"](XREAD|XREADGROUP|XRANGE|XREVRANGE)['"]/i;
  const out: string[] = [];
  for (const [file, text] of files) {
    if (file === 'store/event-log.ts' || file in STREAM_READERS_KNOWN) continue;
    for (const { line, code } of codeLines(text)) {
      const m = call.exec(code);
      if (m) out.push(`${file}:${line} reads a stream (${m[1] ?? m[2]})`);
    }
  }
  return out;
}

function jobsProcessRunners(files: Sources): string[] {
  const spawn =
    /from\s+['"](node:)?child_process['"]|import\(\s*['"](node:)?child_process['"]\s*\)|require\(\s*['"](node:)?child_process['"]\s*\)/;
  const out: string[] = [];
  for (const [file, text] of files) {
    if (!file.startsWith('jobs/')) continue;
    for (const { line, code } of codeLines(text))
      if (spawn.test(code)) out.push(`${file}:${line} imports child_process`);
  }
  return out;
}

describe('architecture rules', () => {
  const files = productionSources();

  test('only jobs/native-args.ts spells a graphrt flag', () => {
    console.log(`# graphrt flags: ${graphrtFlags(files).join(' ')}`);
    assert.deepEqual(flagSpellers(files), []);
  });

  test('only store/event-log.ts reads a Redis stream', () => {
    assert.deepEqual(streamReaders(files), []);
    // an exception that no longer reads a stream is taken off the list, so it cannot hide a new one
    for (const f of Object.keys(STREAM_READERS_KNOWN)) {
      const only = new Map([[f, files.get(f) ?? '']]);
      const asNew = streamReaders(new Map([...only].map(([, t]) => ['orchestrator/as-new.ts', t])));
      assert.ok(
        asNew.length > 0,
        `${f} is listed as a known stream reader but reads none: remove it from STREAM_READERS_KNOWN`,
      );
    }
  });

  test('jobs/ runs no process', () => {
    assert.deepEqual(jobsProcessRunners(files), []);
  });

  test('each rule fails on a planted violation, and not on a comment', () => {
    const planted = (file: string, text: string): Sources => new Map([...files, [file, text]]);
    assert.deepEqual(flagSpellers(planted('worker/planted.ts', "run(binary, ['hello', '--backend', 'cpu']);\n")), [
      'worker/planted.ts:1 spells --backend',
    ]);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the planted source text holds a template literal
    assert.deepEqual(flagSpellers(planted('worker/planted.ts', "const m = `graphrt hello ${'--backend'} cpu`;\n")), [
      'worker/planted.ts:1 spells --backend',
    ]);
    assert.deepEqual(
      flagSpellers(
        planted('worker/planted.ts', "// graphrt '--backend' cpu\n/** `--world` */\nconst x = '--world-size';\n"),
      ),
      [],
    );
    assert.deepEqual(streamReaders(planted('orchestrator/planted.ts', "await redis.xrange(key, '-', '+');\n")), [
      'orchestrator/planted.ts:1 reads a stream (xrange)',
    ]);
    assert.deepEqual(
      streamReaders(planted('orchestrator/planted.ts', "  const r = await conn.call('XREAD', 'STREAMS', key, id);\n")),
      ['orchestrator/planted.ts:1 reads a stream (XREAD)'],
    );
    assert.deepEqual(
      streamReaders(planted('orchestrator/planted.ts', '// an XREAD BLOCK holds its connection: redis.xread(...)\n')),
      [],
    );
    // the dispatcher and the dashboard are no exception: a raw call there fails too
    assert.deepEqual(
      streamReaders(
        planted(
          'orchestrator/dashboard/stream-wakeups.ts',
          "await this.conn.xread('BLOCK', 1000, 'STREAMS', k, id);\n",
        ),
      ),
      ['orchestrator/dashboard/stream-wakeups.ts:1 reads a stream (xread)'],
    );
    assert.deepEqual(
      streamReaders(
        planted(
          'orchestrator/dispatch/block-dispatcher.ts',
          "await this.connection.xrevrange(key, '+', '-', 'COUNT', 1);\n",
        ),
      ),
      ['orchestrator/dispatch/block-dispatcher.ts:1 reads a stream (xrevrange)'],
    );
    assert.deepEqual(jobsProcessRunners(planted('jobs/planted.ts', "import { spawn } from 'node:child_process';\n")), [
      'jobs/planted.ts:1 imports child_process',
    ]);
    assert.deepEqual(jobsProcessRunners(planted('jobs/planted.ts', "const cp = await import('child_process');\n")), [
      'jobs/planted.ts:1 imports child_process',
    ]);
    assert.deepEqual(
      jobsProcessRunners(planted('worker/planted.ts', "import { spawn } from 'node:child_process';\n")),
      [],
    );
  });
});
