// `orch submit --watch` and `orch watch` on a cluster (real redis-server, `orch serve`, `orch
// worker` with fixture ranks), their output read through a pipe with TERM=dumb and COLUMNS=80:
// no escape sequence, no line wider than 80 columns, the clock and the ETA; Ctrl-C (SIGINT) says
// the experiment keeps running and how to cancel it, exits 130 and leaves it running;
// `--cancel-on-interrupt` cancels it.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { displayWidth } from '../../cli/terminal/display-width.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { type Cluster, spawnOrch, startCluster } from '../orchestrator/orch-cluster.ts';
import { waitFor } from '../utils/wait-for.ts';

let cluster: Cluster | null = null;
after(async () => cluster?.stop());

const DUMB = { TERM: 'dumb', COLUMNS: '80' };

function assertPlainWithin80(out: string): void {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: no ESC may reach a dumb terminal
  assert.doesNotMatch(out, /\x1b/, 'no escape sequence under TERM=dumb');
  for (const line of out.split('\n')) assert.ok(displayWidth(line) <= 80, `wider than 80 columns: ${line}`);
}

test('Ctrl-C on submit --watch: the experiment keeps running, the message says how to cancel it, exit 130; --cancel-on-interrupt on watch cancels it', async () => {
  cluster = await startCluster();
  const c = cluster;
  c.startServe();
  await c.startWorker({ cpuCards: 1, repMs: 1000 });
  const store = new ExperimentStore(c.redis, c.prefix);

  const submit = spawnOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml', '--watch'], { ...c.env, ...DUMB });
  const id = await waitFor('the experiment id', async () => /^experiment (\S+) /m.exec(submit.out())?.[1] ?? null, {
    timeoutMs: 30_000,
  });
  await waitFor('a measured rep in the progress', async () => (/ ~\d+ s left/.test(submit.out()) ? true : null), {
    timeoutMs: 60_000,
    intervalMs: 100,
  });
  submit.child.kill('SIGINT');
  const s = await submit.exited;
  console.log(`orch submit --watch, its output:\n${submit.out()}`);
  assert.equal(s.code, 130, submit.out());
  assert.match(submit.out(), new RegExp(`experiment ${id}\\n  keeps running on the cluster`));
  assert.match(submit.out(), new RegExp(`cancel it: +orch cancel ${id}`));
  assert.match(submit.out(), /elapsed \d+ s {2}ETA/);
  assertPlainWithin80(submit.out());
  assert.equal(await store.state(id), 'running', 'the experiment was left running');

  const watch = spawnOrch(['watch', id, '--cancel-on-interrupt'], { ...c.env, ...DUMB });
  await waitFor('watch printed its state', async () => (watch.out().includes(`${id}  running`) ? true : null), {
    timeoutMs: 30_000,
    intervalMs: 100,
  });
  watch.child.kill('SIGINT');
  const w = await watch.exited;
  assert.equal(w.code, 130, watch.out());
  assert.match(watch.out(), new RegExp(`cancelling experiment ${id}`));
  assertPlainWithin80(watch.out());
  const ended = await waitFor(
    'the experiment cancelled',
    async () => {
      const st = await store.state(id);
      return st === 'cancelled' ? st : null;
    },
    { timeoutMs: 30_000, intervalMs: 100 },
  );
  assert.equal(ended, 'cancelled');
});
