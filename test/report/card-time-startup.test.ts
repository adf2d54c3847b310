/**
 * Card time's start-up split, end to end through `orch submit` on one cpu card: a program with a
 * prepare() and a setup() (test/fixtures/ranks/startup-rank.py) runs two blocks; the first starts
 * inside its lease with cold compiler caches, the second is adopted from the host phase (its
 * prepare() ran while the first block held the card) and starts warm. The report says so per rank,
 * from the committed record (summary.json's commits carry each rank's start), not from the stream.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { slowStartSpec } from '../utils/slow-start-spec.ts';
import { submitSpec } from '../utils/submit-spec.ts';

describe('card time: start-up split by where it was paid', () => {
  const buildDir = mkdtempSync(join(tmpdir(), 'orch-card-time-builds-'));
  after(() => rmSync(buildDir, { recursive: true, force: true }));

  test('block 0 in the lease with cold caches; block 1 adopted from the host phase, prepare() not charged, warm', () => {
    const r = submitSpec(
      'card-time-split',
      slowStartSpec('card-time-split', {
        prepareS: 0.8,
        setupS: 0.3,
        tail: 'reps: 2\nblocks: { count: 2, reps_per_block: 2 }\n',
      }),
      // one card: block 1 waits for block 0, whose rank prepares it meanwhile; caches of this run only
      { ORCH_CPU_CARDS: '1', ORCH_BUILD_DIR: join(buildDir, 'builds') },
    );
    assert.ok([0, 3, 4].includes(r.code ?? -1), r.output);
    const commits = r.summary.commits as Record<string, { startup?: Record<string, unknown>[] }>;
    const first = commits['0']?.startup?.[0];
    const second = commits['1']?.startup?.[0];
    assert.ok(
      first !== undefined && second !== undefined,
      `each commit records its rank's start: ${JSON.stringify(commits)}`,
    );
    assert.equal(first.host_phase, false);
    assert.equal(first.caches, 'cold');
    assert.equal(second.host_phase, true, `block 1's rank was adopted from the host phase: ${JSON.stringify(second)}`);
    assert.equal(second.caches, 'warm', 'block 0 compiled into the caches block 1 started with');
    assert.ok((first.prepare_ms as number) >= 800 && (second.prepare_ms as number) >= 800, 'prepare() slept 0.8 s');
    assert.ok(
      (first.hello_ms as number) >= (first.prepare_ms as number) + (first.setup_ms as number),
      'in the lease, block 0 paid prepare() and setup()',
    );

    const section = r.report.slice(r.report.indexOf('## Card time'));
    assert.match(section, /Start-up per rank, from the committed record/);
    const row = (block: number) =>
      section.split('\n').find((l) => l.startsWith(`| ${block} | `) && /warm|cold/.test(l)) ?? '';
    assert.match(row(0), /^\| 0 \| cpu:\S+ \(rank 0\) \| in the lease \| cold \| — \| \d/);
    assert.match(row(1), /^\| 1 \| cpu:\S+ \(rank 0\) \| host phase \| warm \| 0\.8\d* s \| /);
    // block 1: prepare() did not run in the lease
    assert.match(row(1), /\| — \|$/);
    assert.match(row(0), /\| 0\.8\d* s \|$/);
  });
});
