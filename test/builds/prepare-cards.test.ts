/**
 * Which cards the build phase prepares the first blocks' ranks on (orchestrator/scheduler/build-phase.ts
 * preparesBeforeLease, prepareCards): a resident one-rank command experiment only, cards that can
 * serve it, one per block in all over the hosts — never a prepare() per card of a large cluster.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_PREPARE_PER_HOST } from '../../jobs/build-job.ts';
import { planExperiment } from '../../jobs/plan.ts';
import { SpecSchema } from '../../jobs/spec.ts';
import { buildJobOf, hasBuildPhase, prepareCards } from '../../orchestrator/scheduler/build-phase.ts';

function experiment(o: { blocks: number; mode?: 'resident' | 'per_rep'; ranks?: number; design?: 'ab' | 'probe' }) {
  const spec = SpecSchema.parse({
    name: 'prep',
    design: o.design ?? 'ab',
    workload: {
      runtime: 'command',
      run: { cmd: 'python3 prog.py', mode: o.mode ?? 'resident' },
      toggles: { GRAPH: 'request' },
    },
    toggles: ['GRAPH'],
    arms: [
      { name: 'eager', toggles: { GRAPH: false } },
      { name: 'graph', toggles: { GRAPH: true } },
    ],
    reps: 2,
    blocks: { count: o.blocks, ...(o.ranks === undefined ? {} : { ranks: o.ranks }) },
  });
  return { id: 'prep-1', spec, plan: planExperiment(spec, 'h') };
}

// workers that allow command workloads (--allow-command), and one that does not: it prepares none
const cards = [
  ...['h1', 'h2', 'h3'].flatMap((host) =>
    [0, 1].map((index) => ({ id: `cpu:${index}@${host}`, host, backend: 'cpu' as const, caps: ['command' as const] })),
  ),
  { id: 'cpu:0@h0', host: 'h0', backend: 'cpu' as const, caps: [] },
];

test('one card per block in all, host by host; a host past the blocks prepares none', () => {
  const exp = experiment({ blocks: 3 });
  assert.ok(hasBuildPhase(exp), 'a resident one-rank experiment has a build phase without a build');
  const got = prepareCards(exp, ['h3', 'h1', 'h2', 'h0'], cards);
  assert.deepEqual(Object.fromEntries(got), {
    h0: [],
    h1: ['cpu:0@h1', 'cpu:1@h1'],
    h2: ['cpu:0@h2'],
    h3: [],
  });
  assert.deepEqual(buildJobOf(exp, 'h1', 1, got.get('h1')).prepare, ['cpu:0@h1', 'cpu:1@h1']);
  assert.equal(buildJobOf(exp, 'h3', 1, got.get('h3')).prepare, undefined);
  // one block: one prepare() in the whole cluster
  assert.deepEqual([...prepareCards(experiment({ blocks: 1 }), ['h1', 'h2', 'h3'], cards).values()].flat(), [
    'cpu:0@h1',
  ]);
});

test('more blocks than cards: a second round names each card again (its spare slot), never a third', () => {
  const got = prepareCards(experiment({ blocks: 8 }), ['h3', 'h1', 'h2', 'h0'], cards);
  assert.deepEqual(Object.fromEntries(got), {
    h0: [],
    h1: ['cpu:0@h1', 'cpu:1@h1', 'cpu:0@h1', 'cpu:1@h1'],
    h2: ['cpu:0@h2', 'cpu:1@h2'],
    h3: ['cpu:0@h3', 'cpu:1@h3'],
  });
  const many = prepareCards(experiment({ blocks: 40 }), ['h1', 'h2', 'h3'], cards);
  assert.equal([...many.values()].flat().length, 12, 'two per card at most: 6 cards, 12 processes');
  assert.deepEqual(buildJobOf(experiment({ blocks: 8 }), 'h1', 1, got.get('h1')).prepare, got.get('h1'));
  // a host of 40 cards: the build job's bound, not 80
  const wide = Array.from({ length: 40 }, (_, i) => ({
    id: `cpu:${i}@hw`,
    host: 'hw',
    backend: 'cpu' as const,
    caps: ['command' as const],
  }));
  const bounded = prepareCards(experiment({ blocks: 100 }), ['hw'], wide).get('hw')!;
  assert.equal(bounded.length, MAX_PREPARE_PER_HOST);
  assert.deepEqual(buildJobOf(experiment({ blocks: 100 }), 'hw', 1, bounded).prepare, bounded);
});

test('per-rep commands, gangs and trace probes prepare nothing, and have no build phase for it', () => {
  for (const exp of [experiment({ blocks: 3, mode: 'per_rep' }), experiment({ blocks: 3, ranks: 2 })]) {
    assert.equal(prepareCards(exp, ['h1', 'h2'], cards).size, 0);
    assert.equal(hasBuildPhase(exp), false);
  }
});
