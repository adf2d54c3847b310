/**
 * Card time's start-up split, end to end through `orch submit` on one cpu card: a program with a
 * prepare() and a setup() (test/fixtures/ranks/startup-rank.py) runs three blocks. The first two
 * blocks' ranks are prepared by the experiment's build phase before any lease
 * (worker/command/prepare-first.ts; block 1's in the card's spare slot, as the blocks outnumber
 * the cards): block 0 is shorter than a prepare(), and block 1's lease once waited for the rest of
 * a prepare() started at block 0's start (card-time3 on the H100: 3.41 s). Block 0 starts with cold
 * compiler caches, the later blocks warm; block 2's prepare() runs while block 1 holds the card.
 * No lease of the first two pays any prepare(); block 2's pays what it waited for its process to
 * end prepare(), and only that (prepare_waited_ms; it was once reported as overlapped, and the wait
 * as CUDA init). The report says so per rank, from the committed record (summary.json's commits
 * carry each rank's start), not from the stream.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { runOrch } from '../orchestrator/orch-cluster.ts';
import { slowStartSpec } from '../utils/slow-start-spec.ts';
import { submitSpec } from '../utils/submit-spec.ts';

describe('card time: start-up split by where it was paid', () => {
  const buildDir = mkdtempSync(join(tmpdir(), 'orch-card-time-builds-'));
  after(() => rmSync(buildDir, { recursive: true, force: true }));

  test('blocks 0 and 1 prepared before any lease, block 2 beside block 1; cold, then warm; each lease charged only what it waited for', async () => {
    const r = submitSpec(
      'card-time-split',
      slowStartSpec('card-time-split', {
        prepareS: 0.8,
        setupS: 0.3,
        tail: 'reps: 2\nblocks: { count: 3, reps_per_block: 2 }\n',
      }),
      // one card: each block waits for the one before; caches of this run only
      { ORCH_CPU_CARDS: '1', ORCH_BUILD_DIR: join(buildDir, 'builds') },
    );
    assert.ok([0, 3, 4].includes(r.code ?? -1), r.output);
    const commits = r.summary.commits as Record<string, { startup?: Record<string, unknown>[] }>;
    const first = commits['0']?.startup?.[0];
    const second = commits['1']?.startup?.[0];
    const third = commits['2']?.startup?.[0];
    assert.ok(
      first !== undefined && second !== undefined && third !== undefined,
      `each commit records its rank's start: ${JSON.stringify(commits)}`,
    );
    assert.equal(first.host_phase, true, `block 0's rank was prepared by the build phase: ${JSON.stringify(first)}`);
    assert.equal(first.caches, 'cold');
    for (const [block, later] of [second, third].entries()) {
      assert.equal(
        later.host_phase,
        true,
        `block ${block + 1}'s rank was adopted from the host phase: ${JSON.stringify(later)}`,
      );
      assert.equal(later.caches, 'warm', `block 0 compiled into the caches block ${block + 1} started with`);
    }
    for (const s of [first, second, third]) assert.ok((s.prepare_ms as number) >= 800, 'prepare() slept 0.8 s');
    assert.ok(
      (first.hello_ms as number) < (first.prepare_ms as number),
      `block 0's lease paid setup() only, not the 0.8 s prepare(): ${JSON.stringify(first)}`,
    );

    // the build phase says what it prepared (block -1, the host's worker track: for watching)
    const prepared = r.events.filter((e) => e.block === -1 && e.event.event === 'host-prepared');
    assert.equal(prepared.length, 2, JSON.stringify(r.events.filter((e) => e.block === -1)));
    for (const p of prepared) assert.ok((p.event.prepare_ms as number) >= 800, JSON.stringify(p));
    // the trace draws each adopted rank's prepare() from the committed record, one per block
    const id = r.dir.slice(r.dir.lastIndexOf('/') + 1);
    const t = await runOrch(['trace', id, '--results', join(r.dir, '..')], {});
    assert.equal(t.code, 0, t.stderr);
    const slices = (JSON.parse(t.stdout) as { traceEvents: { cat?: string; dur?: number }[] }).traceEvents;
    const prep = slices.filter((e) => e.cat === 'host-phase');
    assert.equal(prep.length, 3, JSON.stringify(prep));
    for (const p of prep) assert.ok((p.dur as number) >= 800_000, `a prepare() slice: ${JSON.stringify(p)}`);

    const section = r.report.slice(r.report.indexOf('## Card time'));
    assert.match(section, /Start-up per rank, from the committed record/);
    const row = (block: number) =>
      section.split('\n').find((l) => l.startsWith(`| ${block} | `) && /warm|cold/.test(l)) ?? '';
    assert.match(row(0), /^\| 0 \| cpu:\S+ \(rank 0\) \| host phase \| cold \| 0\.8\d* s \| /);
    for (const block of [1, 2])
      assert.match(
        row(block),
        new RegExp(`^\\| ${block} \\| cpu:\\S+ \\(rank 0\\) \\| host phase \\| warm \\| \\d[\\d.]* s \\| `),
      );
    // blocks 0 and 1 (the build phase's spare) waited for none of their prepare(); block 2's, for what outlasted block 1
    for (const [block, s] of [first, second].entries()) {
      assert.equal(s.prepare_waited_ms, 0, `block ${block}: ${JSON.stringify(s)}`);
      assert.match(row(block), /\| — \|$/);
    }
    const waited = third.prepare_waited_ms as number;
    assert.equal(typeof waited, 'number', JSON.stringify(third));
    assert.match(row(2), waited > 0 ? /\| \d[\d.]* s \|$/ : /\| — \|$/, `waited ${waited} ms`);
  });
});
