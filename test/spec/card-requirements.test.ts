// workload.requires (jobs/card-requirements.ts) read from a parsed spec and matched against cards
// as their workers register them, and the grant planner holding a block to the cards that meet it
// (orchestrator/scheduler/grant-planner.ts): pure.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  cardRequirements,
  compareCapability,
  meetsRequirements,
  RequiresSchema,
  unmetRequirements,
} from '../../jobs/card-requirements.ts';
import { waitReasonCode } from '../../orchestrator/dashboard/wait-reason-code.ts';
import { type CardSlot, fitGang, neverFits, planGrants } from '../../orchestrator/scheduler/grant-planner.ts';

const MIB_PER_GIB = 1024;
const gpu = (host: string, index: number, gib: number | undefined, cc: string | undefined): CardSlot => ({
  id: `${host}-${index}`,
  host,
  backend: 'cuda',
  index,
  ...(gib === undefined ? {} : { memory_mib: gib * MIB_PER_GIB }),
  ...(cc === undefined ? {} : { compute_capability: cc }),
});
const cpu = (host: string, index: number): CardSlot => ({ id: `cpu:${index}@${host}`, host, backend: 'cpu', index });
const need = (list: unknown) => cardRequirements(RequiresSchema.parse(list));

test('the list as YAML parses it reads as one requirement', () => {
  assert.deepEqual(need(['cuda', { min_memory_gb: 80 }, { compute_capability: '9.0' }]), {
    cuda: true,
    minMemoryGb: 80,
    computeCapability: '9.0',
  });
  assert.deepEqual(need(['cuda']), { cuda: true });
  assert.equal(cardRequirements(undefined), undefined);
});

test('a card meets a floor only when it reported that much: memory in GiB, capability by major then minor', () => {
  const hopper = need(['cuda', { min_memory_gb: 80 }, { compute_capability: '9.0' }]);
  assert.equal(meetsRequirements(hopper, gpu('h', 0, 140, '9.0')), true);
  assert.equal(meetsRequirements(hopper, gpu('h', 0, 80, '9.0')), true, 'exactly the floor is enough');
  assert.equal(meetsRequirements(hopper, gpu('h', 0, 79, '9.0')), false);
  assert.equal(meetsRequirements(hopper, gpu('h', 0, 140, '8.6')), false);
  assert.equal(meetsRequirements(hopper, gpu('h', 0, 140, '10.0')), true, 'a later major is newer, not "1" < "9"');
  assert.equal(meetsRequirements(hopper, gpu('h', 0, undefined, '9.0')), false, 'memory not reported');
  assert.equal(meetsRequirements(hopper, gpu('h', 0, 140, undefined)), false, 'capability not reported');
  assert.equal(meetsRequirements(need(['cuda']), cpu('h', 0)), false);
  assert.equal(meetsRequirements(need(['cuda']), gpu('h', 0, undefined, undefined)), true);
  assert.equal(meetsRequirements(undefined, cpu('h', 0)), true, 'no list: any card');
  assert.ok(compareCapability('12.1', '9.0') > 0 && compareCapability('8.9', '8.6') > 0);
});

test('why no card meets it: the requirement as written and the cards with what they reported', () => {
  assert.equal(
    unmetRequirements(need(['cuda', { min_memory_gb: 80 }]), [
      cpu('h1', 0),
      cpu('h1', 1),
      gpu('h2', 0, 40, '8.0'),
      gpu('h3', 0, undefined, undefined),
    ]),
    'workload.requires [cuda, min_memory_gb: 80]; cards: 2 cpu@h1, 1 cuda@h2 (40 GiB, cc 8.0), 1 cuda@h3 (memory and cc not reported)',
  );
  assert.equal(unmetRequirements(need(['cuda']), [cpu('h1', 0), gpu('h2', 0, 40, '8.0')]), null);
});

test('the planner gives a requiring block only cards that meet it, and says why none does', () => {
  const cards = [gpu('small', 0, 40, '9.0'), gpu('small', 1, 40, '9.0'), gpu('big', 0, 140, '9.0')];
  const requires = need(['cuda', { min_memory_gb: 80 }])!;
  const block = { key: 'b', ranks: 1, backend: 'any' as const, requires, placement: 'host' as const, expectedMs: 1 };
  assert.deepEqual(
    fitGang(block, cards)?.map((c) => c.id),
    ['big-0'],
  );
  const d = planGrants({ now: 0, cards, busy: new Set(['big-0']), running: [], waiting: [block] });
  assert.deepEqual(d.grants, [], 'the small cards are free, and not enough');
  assert.equal(
    neverFits({ ...block, ranks: 1 }, cards.slice(0, 2)),
    'no card is registered that can run this: workload.requires [cuda, min_memory_gb: 80]; cards: 2 cuda@small (40 GiB, cc 9.0)',
  );
  // /metrics counts it with the planner's other "no card" sentences, never as `other`
  assert.equal(waitReasonCode(neverFits(block, cards.slice(0, 2))), 'no-cards');
  assert.match(neverFits({ ...block, ranks: 2 }, cards)!, /needs 2 cards on one host; the largest host, big, has 1/);
});
