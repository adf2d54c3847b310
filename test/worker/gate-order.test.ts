/**
 * The identity gates of a block run in the order its sequence first runs their arms: the gate's
 * capture is the graph the arm's reps replay, and on the H200 the graph instantiated second ran
 * slower (0.35-0.58 % in one process, 12 % across two processes: bench/h200-builds). In arm order
 * the control's graph would be captured first in every block, a bias in every comparison;
 * following the sequence, whose first arm alternates between blocks, counterbalances it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { armsNeedingIdentity } from '../../jobs/block-job.ts';
import { blockJob } from '../utils/block-jobs.ts';

const graph = (name: string) => ({ name, toggles: { graph: true, pdl: true } });
const job = (sequence: string[]) =>
  blockJob({
    experiment: 'e',
    block: 0,
    attempt: 1,
    epoch: 1,
    host: 'h',
    cards: ['c0'],
    arms: [graph('main'), graph('mine'), { name: 'eager', toggles: { graph: false } }],
    sequence,
  });

test('gates follow the first appearance of each graph arm in the block sequence, so capture order alternates between blocks', () => {
  assert.deepEqual(
    armsNeedingIdentity(job(['main', 'mine', 'mine', 'main'])).map((a) => a.name),
    ['main', 'mine'],
  );
  assert.deepEqual(
    armsNeedingIdentity(job(['mine', 'main', 'main', 'mine'])).map((a) => a.name),
    ['mine', 'main'],
  );
  assert.deepEqual(
    armsNeedingIdentity(job(['eager', 'mine', 'main'])).map((a) => a.name),
    ['mine', 'main'],
  );
});

test('a graph arm the sequence does not run is gated last, in arm order', () => {
  assert.deepEqual(
    armsNeedingIdentity(job(['eager', 'mine'])).map((a) => a.name),
    ['mine', 'main'],
  );
});

test('no gates when the identity gate is off', () => {
  assert.deepEqual(armsNeedingIdentity({ ...job(['mine', 'main']), gates: { identity: null, aa: false } }), []);
});
