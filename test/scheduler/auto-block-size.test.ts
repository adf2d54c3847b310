/**
 * blocks.reps_per_block: auto end to end, through `orch plan` and `orch submit` on one cpu card: a
 * program whose setup() sleeps 1.5 s and whose reps take milliseconds. The plan says the blocks
 * after the first wait for its measure; the first block runs the spec's reps, and the blocks after
 * it are regrouped, larger, from its committed start-up and rep time; every planned rep ends
 * measured once; the registered blocks left without reps end stopped; the report says how the
 * blocks were sized ("blocks of N reps per arm (…): start-up … s of … s").
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { runOrch } from '../cli/run-orch.ts';
import { runOrch as runOrchIn, spawnOrch, startCluster } from '../orchestrator/orch-cluster.ts';
import { slowStartSpec } from '../utils/slow-start-spec.ts';
import { submitSpec } from '../utils/submit-spec.ts';
import { waitFor } from '../utils/wait-for.ts';

const REPS = 2;
const BLOCKS = 6;
const spec = (name: string) =>
  slowStartSpec(name, { prepareS: 0, setupS: 1.5, tail: `reps: ${REPS}\nblocks: { count: ${BLOCKS} }\n` });

describe('blocks.reps_per_block: auto', () => {
  const dir = mkdtempSync(join(tmpdir(), 'orch-auto-blocks-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('orch plan says the blocks after the first are sized from its start-up', () => {
    const file = join(dir, 'auto-plan.yaml');
    writeFileSync(file, spec('auto-plan'));
    const r = runOrch(['plan', file]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(
      r.stdout,
      /reps per block: auto: block 0 runs 2 reps per arm; once it has measured its start-up and rep time, the 5 block\(s\) after it \(10 reps per arm\) are regrouped into fewer, larger blocks so that start-up is at most 3 % of a block's lease/,
    );
  });

  test('a slow start and short reps: later blocks larger, every rep measured once, the report says so', () => {
    const r = submitSpec('auto-blocks', spec('auto-blocks'), {
      ORCH_CPU_CARDS: '1',
      ORCH_BUILD_DIR: join(dir, 'builds'),
    });
    assert.ok([0, 3, 4].includes(r.code ?? -1), r.output);
    const reps = r.events.filter((e) => e.committed && e.event.type === 'rep');
    const perBlock = new Map<number, number>();
    for (const e of reps) perBlock.set(e.block, (perBlock.get(e.block) ?? 0) + 1);
    const arms = 2;
    assert.equal(perBlock.get(0), REPS * arms, 'the first block runs the spec reps');
    const later = [...perBlock.entries()].filter(([b]) => b > 0).map(([, n]) => n);
    assert.ok(later.length > 0 && later.length < BLOCKS - 1, `fewer blocks after the first: ${[...perBlock]}`);
    assert.ok(
      later.every((n) => n > REPS * arms),
      `each later block larger than the first: ${[...perBlock]}`,
    );
    assert.equal(reps.length, REPS * arms * BLOCKS, 'the reps in all are the plan’s, each measured once');
    const keys = new Set(reps.map((e) => `${e.block}/${e.event.arm}/${e.event.rep ?? e.event.id}`));
    assert.equal(keys.size, reps.length, 'no rep measured twice');

    const states = r.summary.blocks as { block: number; phase: string; reason: string | null }[];
    const stopped = states.filter((b) => b.phase === 'stopped');
    assert.equal(
      stopped.length,
      BLOCKS - 1 - later.length,
      `the emptied blocks end stopped: ${JSON.stringify(states)}`,
    );
    for (const b of stopped) assert.match(b.reason ?? '', /blocks\.reps_per_block: auto: its reps run in the/);

    const sizing = r.summary.analysis.plan.block_sizing as { sizes: number[]; startup_ms: number };
    assert.deepEqual(
      sizing.sizes.map((k) => k * arms),
      later,
      'report.json says the sizes the blocks ran',
    );
    assert.ok(sizing.startup_ms >= 1500, `the start-up measured holds setup()'s 1.5 s: ${sizing.startup_ms}`);
    assert.match(
      r.report,
      /then \d+ sized by blocks\.reps_per_block: auto, blocks of \d+ reps per arm \(\d+ reps\): start-up [\d.]+ s of [\d.]+ s/,
    );
  });

  test('while block 0 runs, orch status says why the blocks after it wait', async () => {
    const c = await startCluster();
    try {
      c.startServe();
      await c.startWorker({ cpuCards: 1, repMs: 50 });
      const file = join(dir, 'auto-status.yaml');
      // block 0's setup() takes 8 s: the blocks after it are held that long, longer than a few `orch status` on a loaded machine
      writeFileSync(
        file,
        slowStartSpec('auto-status', { prepareS: 0, setupS: 8, tail: `reps: ${REPS}\nblocks: { count: ${BLOCKS} }\n` }),
      );
      const submit = spawnOrch(['submit', file, '--results', join(dir, 'status-results')], c.env);
      const held = await waitFor(
        'a block held for sizing, with its reason, in orch status --json',
        async () => {
          const r = await runOrchIn(['status', '--json'], c.env);
          if (r.code !== 0) return undefined;
          const exps = (JSON.parse(r.stdout) as { experiments: { blocks: { block: number; why: string | null }[] }[] })
            .experiments;
          return exps
            .flatMap((e) => e.blocks)
            .find((b) => b.block > 0 && /^waiting for block 0 to commit/.test(b.why ?? ''));
        },
        { timeoutMs: 90_000, intervalMs: 250 },
      );
      assert.match(held.why ?? '', /its measured start-up sizes the blocks after it \(blocks\.reps_per_block: auto\)/);
      const end = await submit.exited;
      assert.ok([0, 3, 4].includes(end.code ?? -1), submit.out());
    } finally {
      await c.stop();
    }
  });
});
