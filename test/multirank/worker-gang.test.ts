/**
 * A 2- and a 4-rank block run by a real `orch worker` (real graphrt ranks, CPU backend): kill -9 of
 * one rank in the middle of a rep (rank 0 of 2, rank 2 of 4) fails the whole block within a
 * second — the other ranks leave on their own (RANK_LOST at their next all-reduce, or graphrt's
 * watchdog) and the worker kills the gang — and the host job's failure names the killed rank (its
 * own exit, or a survivor's RANK_LOST naming it). Every card's lease is released and the
 * rendezvous directory of the attempt is gone after.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { LeaseStore } from '../../store/lease-store.ts';
import { GRAPHRT, skipWithoutBinary } from '../native/graphrt.ts';
import { BareExperimentDispatcher, blockJob } from '../utils/block-jobs.ts';
import { rankPids, waitForEvents } from '../utils/events.ts';
import { isAlive, waitGone } from '../utils/processes.ts';
import { freshPrefix } from '../utils/redis.ts';
import { useWorkerEnv } from '../utils/worker-env.ts';

/**
 * The rendezvous directories under `dir`: the worker's TMPDIR, a directory of this test's own. The
 * system's /tmp is shared with the long test lane beside this one (scripts/run-tests.mjs: the
 * mutation check's gangs make and remove theirs there), which a full run once saw as two
 * directories this attempt had "left".
 */
const rendezvousDirs = (dir: string) => readdirSync(dir).filter((n) => n.startsWith('orch-rv-'));

describe('worker: gangs of 2 and 4 graphrt ranks', { skip: skipWithoutBinary }, () => {
  const env = useWorkerEnv('multirank');

  for (const { world, victimRank } of [
    { world: 2, victimRank: 0 },
    { world: 4, victimRank: 2 },
  ]) {
    test(`kill -9 of rank ${victimRank} of ${world} mid-rep: the whole block fails within a second, naming the rank, every card free`, async () => {
      const prefix = freshPrefix();
      const tmp = mkdtempSync(join(env.dir, 'tmp-'));
      await env.spawn({
        prefix,
        host: 'm1',
        cards: Array.from({ length: world }, (_, i) => `cpu:${i}`).join(','),
        graphrt: GRAPHRT,
        env: { TMPDIR: tmp },
      });
      const leases = new LeaseStore(env.redis, { prefix });
      const dispatcher = new BareExperimentDispatcher(env.redis, { prefix, pollMs: 20 });
      const before = new Set(rendezvousDirs(tmp));
      try {
        const cards = Array.from({ length: world }, (_, i) => `cpu:${i}@m1`);
        const g = await leases.acquireGang({ cards, owner: 'm1', ttlMs: 10_000, experiment: 'mk', block: 0 });
        assert.ok(g.granted);
        const job = blockJob({
          experiment: 'mk',
          block: 0,
          attempt: 1,
          epoch: g.epoch,
          host: 'm1',
          cards,
          steps: 3000,
          workload: {
            runtime: 'native',
            backend: 'cpu',
            kind: 'decode',
            params: { layers: 2, kernels_per_layer: 12, hidden: 32, max_pos: 16 },
            warmup: 1,
            steps: 3000,
          },
          arms: [{ name: 'tp', toggles: { graph: true, allreduce: true } }],
          sequence: ['tp', 'tp'],
          gates: { identity: null, aa: false },
        });
        await dispatcher.dispatch(job);
        const evs = await waitForEvents(
          env.redis,
          prefix,
          'mk',
          'the capture of the first rep',
          (e) => e.filter((x) => x.event.type === 'capture').length === world,
          30_000,
        );
        const pids = rankPids(evs, 1);
        assert.equal(rendezvousDirs(tmp).length, 1, "the attempt's rendezvous directory, in the worker's TMPDIR");
        assert.equal(pids.length, world);
        const victim = Number(evs.find((e) => e.event.type === 'hello' && e.rank === String(victimRank))?.event.pid);
        await new Promise((r) => setTimeout(r, 200)); // inside the rep (3000 steps: seconds)
        assert.ok(pids.every(isAlive), 'all ranks busy with the rep');
        const t0 = Date.now();
        process.kill(victim, 'SIGKILL');
        const goneMs = await waitGone(pids, t0, 5000);
        const end = await dispatcher.waitEnd(job, { timeoutMs: 10_000 });
        console.log(`# rank ${victimRank} of ${world} killed: every rank gone after ${goneMs} ms; block ${end.state}`);
        assert.ok(goneMs < 1000, `the gang is gone within a second (${goneMs} ms)`);
        assert.equal(end.state, 'failed');
        // First exit wins: the killed rank itself, or a survivor's RANK_LOST that names it.
        assert.match(
          end.state === 'failed' ? end.reason : '',
          new RegExp(
            `rank ${victimRank} on card cpu:${victimRank}@m1 \\(pid \\d+\\) was killed by SIGKILL|` +
              `exited with code 7, signal none; last error: RANK_LOST: rank \\d: (the gang lost rank ${victimRank}|rank ${victimRank} closed its connection)`,
          ),
        );
        assert.deepEqual(await leases.held(cards), [], 'every card of the gang is free');
        assert.deepEqual(
          rendezvousDirs(tmp).filter((d) => !before.has(d)),
          [],
          'the attempt removed its rendezvous directory',
        );
      } finally {
        await dispatcher.close();
      }
    });
  }
});
