/**
 * blocks.placement: host_then_spread is a strict spec value wired through the plan into the
 * grant planner's spread fallback: one host while one holds the gang, across hosts when none
 * can; a misspelt placement is refused with the three values; a spec that leaves placement out
 * keeps the hash it had (a new value, not a new field).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { SpecError } from '../../jobs/errors.ts';
import { gangPlacement, planExperiment } from '../../jobs/plan.ts';
import { type CardSlot, fitGang, neverFits } from '../../orchestrator/scheduler/grant-planner.ts';
import { parseConfigText } from '../../orchestrator/spec/load-spec.ts';

const base = readFileSync('test/fixtures/specs/three-ranks.yaml', 'utf8');
const withPlacement = (p: string) =>
  parseConfigText(
    'p.yaml',
    base.replace('blocks: { count: 1, ranks: 3 }', `blocks: { count: 1, ranks: 3, placement: ${p} }`),
  );
const slots = (host: string, n: number): CardSlot[] =>
  Array.from({ length: n }, (_, i) => ({ id: `cpu:${i}@${host}`, host, backend: 'cpu', index: i }));

test('host_then_spread plans as host with the spread fallback: one host when one holds the gang, else across hosts', () => {
  const loaded = withPlacement('host_then_spread');
  assert.equal(loaded.kind, 'experiment');
  if (loaded.kind !== 'experiment') return;
  const plan = planExperiment(loaded.spec, loaded.hash);
  assert.equal(plan.placement, 'host_then_spread');
  assert.deepEqual(gangPlacement(plan.placement), { placement: 'host', spreadFallback: true });
  const block = { key: 'b0', ranks: 3, backend: 'cpu' as const, ...gangPlacement(plan.placement), expectedMs: 0 };
  assert.deepEqual(
    fitGang(block, [...slots('h1', 2), ...slots('h2', 3)])!.map((c) => c.host),
    ['h2', 'h2', 'h2'],
  );
  assert.deepEqual(
    fitGang(block, [...slots('h1', 2), ...slots('h2', 2)])!.map((c) => c.host),
    ['h1', 'h1', 'h2'],
  );
  assert.equal(
    neverFits({ key: 'b0', ranks: 3, backend: 'cpu', ...gangPlacement('host'), expectedMs: 0 }, [
      ...slots('h1', 2),
      ...slots('h2', 2),
    ]),
    'needs 3 cpu cards on one host; the largest host, h1, has 2',
  );
  assert.deepEqual(gangPlacement('spread'), { placement: 'spread' });
});

test('a misspelt placement names the three values; leaving it out keeps the spec hash of placement host', () => {
  assert.throws(
    () => withPlacement('pack'),
    (err: unknown) =>
      err instanceof SpecError && /blocks\.placement/.test(err.message) && /host_then_spread/.test(err.message),
  );
  const implicit = parseConfigText('p.yaml', base);
  const explicit = withPlacement('host');
  assert.ok(implicit.kind === 'experiment' && explicit.kind === 'experiment');
  assert.equal(implicit.hash, explicit.hash);
});
