/**
 * A sequential experiment's results are written whatever its looks could say. Real Redis: a
 * `stopping: sequential` spec submitted, every planned rep committed with simulated step times
 * (test/stats/simulate.ts), each block ended in order, then the results writer
 * (orchestrator/results/write-results.ts) as `orch report ID` runs it. Two valid specs whose looks
 * cannot stop early:
 *   - reps: 2, five looks over 5 blocks: look 1 has 2 pairs, its t critical value (df 1) about
 *     590 700, so its repeated CI's upper end exp(mean + c·se) − 1 overflows;
 *   - ten looks over 10 blocks: look 2 spends no alpha (t-boundaries.ts), so it has no boundary.
 * Either wrote Infinity into the analysis; report.json's schema refused the null it became, and the
 * writer stopped before report.md and summary.json.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { plannedReps, repKey } from '../../jobs/rep-ref.ts';
import { submitExperiment } from '../../orchestrator/experiment/submit.ts';
import { writeResults } from '../../orchestrator/results/write-results.ts';
import { loadSpec } from '../../orchestrator/spec/load-spec.ts';
import type { Sequential } from '../../orchestrator/stats/analysis-schema.ts';
import { ExperimentStore, initialBlockState } from '../../store/experiment-store.ts';
import { orchKeys } from '../../store/keys.ts';
import { seeded, simulateReps, twoArms } from '../stats/simulate.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';

const env = privateRedis();
const scratch = mkdtempSync(join(tmpdir(), 'orch-sequential-results-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** A sequential A/B submitted and run to its budget: every rep committed, the blocks ended in order. */
async function ranSequential(name: string, stopping: string, reps: number): Promise<{ prefix: string; id: string }> {
  const file = join(scratch, `${name}.yaml`);
  writeFileSync(
    file,
    `name: ${name}
design: ab
workload: { runtime: native, kind: chain }
toggles: [graph]
arms:
  - { name: eager, toggles: {} }
  - { name: graph, toggles: { graph: true } }
reps: ${reps}
stopping: ${stopping}
metric: { min_effect: 0.0001 }
`,
  );
  const prefix = freshPrefix('sq');
  const { id } = await submitExperiment({ redis: env.redis, prefix, loaded: loadSpec(file) });
  const store = new ExperimentStore(env.redis, prefix);
  const exp = (await store.get(id))!;
  const keys = orchKeys(prefix);
  // a small change under the noise: no look decides before the budget
  const sim = twoArms(0.999, { blocks: exp.plan.blocks.length, reps });
  sim.arms = [
    { name: 'eager', mu: 40, toggles: {} },
    { name: 'graph', mu: 40 * 0.999, toggles: {} },
  ];
  const simulated = simulateReps(sim, exp.plan, seeded(3));
  for (const [i, b] of exp.plan.blocks.entries()) {
    await env.redis.hset(keys.commits(id), String(b.index), JSON.stringify({ attempt: 1, epoch: 1, host: 'h' }));
    for (const r of plannedReps(exp.plan, b.index)) {
      const rep = simulated.find((s) => s.block === r.block && s.arm === r.arm && s.rep === r.rep)!;
      await env.redis.hset(
        keys.results(id),
        repKey(r),
        JSON.stringify({ ...rep, experiment: id, position: r.position }),
      );
    }
    const moved = await store.transitionBlock(
      id,
      { phase: 'waiting', attempt: 0 },
      { ...initialBlockState(b.index), phase: 'done', attempt: 1, ended_at: 1_700_000_000_000 + i },
    );
    assert.ok(moved.written);
  }
  await store.finish(id, 'done', null);
  return { prefix, id };
}

/** The results written, every file there, the report's looks read back through the schema's type. */
async function written(prefix: string, id: string): Promise<{ looks: Sequential['looks']; md: string }> {
  const root = join(scratch, 'results');
  const { dir } = await writeResults(env.redis, prefix, id, root);
  for (const f of ['report.md', 'report.json', 'summary.json', 'comparisons.csv'])
    assert.ok(existsSync(join(dir, f)), `${f} written`);
  const json = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')) as { sequential: Sequential };
  const md = readFileSync(join(dir, 'report.md'), 'utf8');
  assert.doesNotMatch(md, /Infinity|NaN/);
  return { looks: json.sequential.looks, md };
}

describe('the results of a sequential experiment', () => {
  test('reps 2: look 1 (2 pairs) has a boundary but no finite repeated CI; the results are written', async () => {
    const { prefix, id } = await ranSequential('seq-two', '{ rule: sequential, max_blocks: 5 }', 2);
    const { looks, md } = await written(prefix, id);
    assert.equal(looks.length, 5);
    const first = looks[0]!;
    assert.equal(first.pairs, 2);
    assert.ok(first.boundary !== null && first.critical !== null && first.critical > 1e5, JSON.stringify(first));
    assert.equal(first.rci, null, 'an overflowing repeated CI is no CI');
    assert.equal(first.decision, 'continue');
    for (const l of looks.slice(1)) assert.ok(l.rci?.every(Number.isFinite), JSON.stringify(l));
    assert.match(md, /\| 1 \| 1 of 5 \| 20 % \| 2 \| 4\.877 \| 590\d+\.\d+ \| [^|]+ \| — \| continue \|/);
    assert.match(md, /A repeated CI "—" beside a boundary is unbounded at that look/);
    assert.doesNotMatch(md, /to —/);
  });

  test('ten looks over 10 blocks: look 2 spends no alpha, no boundary; the results are written', async () => {
    const { prefix, id } = await ranSequential('seq-ten', '{ rule: sequential, max_blocks: 10, looks: 10 }', 3);
    const { looks, md } = await written(prefix, id);
    assert.equal(looks.length, 10);
    const second = looks[1]!;
    assert.deepEqual([second.boundary, second.critical, second.rci, second.decision], [null, null, null, 'continue']);
    assert.ok(second.estimate !== null, 'its estimate is still shown');
    assert.match(md, /\| 2 \| 2 of 10 \| 20 % \| 6 \| none \| — \| [^|]+ \| — \| continue \|/);
    assert.match(md, /A look with boundary "none" spends no alpha/);
  });
});
