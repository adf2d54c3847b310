// Two experiments submitted together onto two cards (real redis-server, `orch serve`, `orch worker`
// with fixture ranks as processes): both finish; blocks are granted in FIFO order across the two
// experiments (all of the first's before any of the second's, each in block order); no card ever
// has two rank processes alive at once (from the ranks' own start/end log).

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { waitFor } from '../utils/wait-for.ts';
import { type Cluster, rankIntervals, runOrch, spawnOrch, startCluster } from './orch-cluster.ts';

let cluster: Cluster | null = null;
after(async () => cluster?.stop());

test('two experiments on two cards: both finish, FIFO interleaving, one rank per card at a time', async () => {
  cluster = await startCluster();
  const c = cluster;
  c.startServe();
  await c.startWorker({ cpuCards: 2, repMs: 60 });
  const [a, b] = await Promise.all([
    runOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml', '--no-wait'], c.env),
    runOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml', '--no-wait'], c.env),
  ]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  const store = new ExperimentStore(c.redis, c.prefix);
  // FIFO is by submission order as registered (the two CLIs race to it)
  const ids = [a.stdout.trim(), b.stdout.trim()];
  const seqs = await Promise.all(ids.map(async (id) => (await store.get(id))!.seq));
  if (seqs[0]! > seqs[1]!) ids.reverse();
  const t0 = Date.now();
  // `orch watch` follows the first one live, from the event stream, and exits when it ends
  // (--fail-on none: its exit code is the experiment's end, not the verdict of two arms of one speed)
  const watch = spawnOrch(['watch', ids[0]!, '--fail-on', 'none'], c.env);
  await waitFor(
    'both experiments ended',
    async () => {
      const s = await Promise.all(ids.map((id) => store.state(id)));
      return s.every((x) => x === 'done' || x === 'failed' || x === 'cancelled') ? s : null;
    },
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  for (const id of ids) assert.equal(await store.state(id), 'done', id);
  console.log(`both ended ${Date.now() - t0} ms after submit`);
  const w = await watch.exited;
  assert.equal(w.code, 0, watch.out());
  // off a terminal, watch prints one line per change, each led by the experiment id: the last
  // line of each block and of the state is its final one
  const lines = watch
    .out()
    .split('\n')
    .filter((l) => l.startsWith(`${ids[0]}  `));
  const last = (prefix: string) => lines.filter((l) => l.startsWith(`${ids[0]}  ${prefix}`)).at(-1) ?? '';
  console.log(`orch watch, its lines:\n${lines.join('\n')}`);
  assert.match(
    lines.filter((l) => !/ {2}block \d+ {2}/.test(l)).at(-1)!,
    new RegExp(`^${ids[0]}  done  elapsed \\d+ s$`),
  );
  for (const b of [0, 1, 2])
    assert.match(
      last(`block ${b}  `),
      new RegExp(`block ${b}  \\[#{24}\\]   4/4  done a1  last (eager|graph) (eager|graph)/cpu median [0-9.]+ ms/step`),
    );

  const grants = (
    await Promise.all(
      ids.map(async (id) =>
        (
          await store.blocks(id)
        ).map((b) => ({
          key: `${id}.b${b.block}`,
          exp: id,
          block: b.block,
          at: b.granted_at!,
          attempts: b.attempts.length,
          cards: b.attempts[0]!.gang.flatMap((g) => g.cards),
        })),
      ),
    )
  )
    .flat()
    .sort((x, y) => x.at - y.at);
  const fifo = ids.flatMap((id) => [0, 1, 2].map((i) => `${id}.b${i}`));
  if (process.env.ORCH_TEST_LOG) console.log(c.serves[0]!.out(), grants);
  assert.deepEqual(
    grants.map((g) => g.key),
    fifo,
    'granted in submission order, block order within',
  );
  assert.ok(
    grants.every((g) => g.attempts === 1),
    'each block ran once',
  );
  // interleaved on the cards: the second experiment's first block starts while the first still runs
  assert.equal(new Set(grants.map((g) => g.cards[0])).size, 2, 'both cards used');

  if (process.env.ORCH_TEST_LOG) console.log(c.serves[0]!.out());
  const iv = rankIntervals(c.rankLog());
  assert.equal([...iv.values()].flat().length, 6, 'one rank process per block (6 blocks × 1 rank), none twice');
  for (const [card, list] of iv) {
    const sorted = [...list].sort((x, y) => x.start - y.start);
    for (let i = 1; i < sorted.length; i++) {
      assert.ok(
        sorted[i]!.start >= sorted[i - 1]!.end,
        `card ${card}: rank ${sorted[i]!.pid} started at ${sorted[i]!.start} while ${sorted[i - 1]!.pid} lived until ${sorted[i - 1]!.end}`,
      );
    }
  }
});
