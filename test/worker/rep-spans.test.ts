/**
 * Rep spans through the real path: `orch worker` with resident graphrt ranks (CPU backend) runs a
 * block of eager and graph reps; every rep line carries t_start_ns ≤ t_end_ns on the rank's
 * monotonic clock, a rank's reps do not overlap, and the card busy share is computed from the
 * committed reps and commit records alone (orchestrator/stats/busy-share.ts).
 * Skips, saying so, when native/build/graphrt has not been built, except under CI.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { readEvents } from '../../orchestrator/results/collect-results.ts';
import { busyShare } from '../../orchestrator/stats/busy-share.ts';
import { orchKeys } from '../../store/keys.ts';
import { LeaseStore } from '../../store/lease-store.ts';
import { ResultStore } from '../../store/result-store.ts';
import { skipWithoutBinary } from '../native/graphrt.ts';
import { BareExperimentDispatcher, blockJob } from '../utils/block-jobs.ts';
import { freshPrefix } from '../utils/redis.ts';
import { useWorkerEnv } from '../utils/worker-env.ts';

const GRAPHRT = fileURLToPath(new URL('../../native/build/graphrt', import.meta.url));

describe('rep spans and card busy share', { skip: skipWithoutBinary }, () => {
  const env = useWorkerEnv('rep-spans');

  test('rep lines carry ordered spans; busy share from a results directory', async () => {
    const prefix = freshPrefix();
    await env.spawn({ prefix, host: 's1', cards: 'cpu:0', graphrt: GRAPHRT });
    const leases = new LeaseStore(env.redis, { prefix });
    const results = new ResultStore(env.redis, { prefix });
    const dispatcher = new BareExperimentDispatcher(env.redis, { prefix, pollMs: 20 });
    const dir = mkdtempSync(join(tmpdir(), 'orch-busy-'));
    try {
      const cards = ['cpu:0@s1'];
      const g = await leases.acquireGang({ cards, owner: 's1', ttlMs: 10_000, experiment: 'sp', block: 0 });
      assert.ok(g.granted);
      const job = blockJob({ experiment: 'sp', block: 0, attempt: 1, epoch: g.epoch, host: 's1', cards });
      await dispatcher.dispatch(job);
      const end = await dispatcher.waitEnd(job, { timeoutMs: 60_000 });
      assert.equal(end.state, 'completed', JSON.stringify(end));

      const events = await readEvents(env.redis, orchKeys(prefix).events('sp'), await results.commits('sp'));
      const reps = events
        .map(
          (e) =>
            e.event as {
              type?: string;
              mode?: string;
              t_start_ns?: number;
              t_end_ns?: number;
              step_ms?: number[];
              warmup_ms?: number[];
              settle_ms?: number | null;
            },
        )
        .filter((e) => e.type === 'rep');
      assert.equal(reps.length, job.sequence.length);
      for (const r of reps) {
        assert.equal(typeof r.t_start_ns, 'number', 'every rep line has t_start_ns');
        assert.ok((r.t_start_ns as number) <= (r.t_end_ns as number), 'a rep ends after it starts');
        const steps = (r.step_ms as number[]).reduce((a, b) => a + b, 0);
        assert.ok(
          ((r.t_end_ns as number) - (r.t_start_ns as number)) / 1e6 >= steps * 0.99,
          'the span holds the measured steps',
        );
      }
      for (let i = 1; i < reps.length; i++)
        assert.ok(
          (reps[i]!.t_start_ns as number) >= (reps[i - 1]!.t_end_ns as number),
          'one rank serves one rep at a time, in order',
        );

      // a graph rep's settle step (native/PROTOCOL.md) is on its line; an eager rep has none
      assert.ok(
        reps.some((r) => r.mode === 'graph') && reps.some((r) => r.mode === 'eager'),
        'the block has graph and eager reps',
      );
      for (const r of reps)
        assert.equal(
          typeof r.settle_ms,
          r.mode === 'graph' ? 'number' : 'object',
          `settle_ms of a ${r.mode} rep: ${r.settle_ms}`,
        );

      // the committed record keeps what each rank's line said: span, warm-up, settle and hashes
      const committed = Object.values(await results.results('sp'));
      assert.equal(committed.length, reps.length);
      for (const c of committed) {
        const line = reps[c.position]!;
        assert.equal(c.answers?.length, 1, 'one rank answer per rank');
        assert.equal(c.answers![0]!.card, 'cpu:0@s1');
        const rank = c.answers![0]!.line as typeof line & { hashes?: string[] };
        assert.deepEqual(
          [rank.t_start_ns, rank.t_end_ns, rank.warmup_ms, rank.settle_ms],
          [line.t_start_ns, line.t_end_ns, line.warmup_ms, line.settle_ms],
        );
        assert.deepEqual(rank.hashes, c.hashes);
      }

      const rows = busyShare(committed, await results.commits('sp'));
      assert.equal(rows.length, 1);
      const row = rows[0]!;
      assert.equal(row.block, 0);
      assert.deepEqual(row.set_aside, []);
      assert.equal(row.reps, job.sequence.length);
      assert.ok(row.leased_ms > 0);
      assert.ok(row.step_share > 0 && row.step_share <= 1, `step share ${row.step_share}`);
      assert.ok(
        row.rep_share !== null && row.rep_share >= row.step_share && row.rep_share <= 1,
        `rep share ${row.rep_share} ≥ step share`,
      );
      assert.ok(row.gap_p50_ms !== null && row.gap_p50_ms >= 0 && (row.gap_p99_ms as number) >= row.gap_p50_ms);
      // warm-up steps are card time too: the warm-up + measured share is at least the measured one
      assert.ok(
        row.busy_share !== null && row.busy_share >= row.step_share && row.busy_share <= 1,
        `busy share ${row.busy_share}`,
      );
      // the unmeasured card time: every warm-up step and every graph rep's settle step (one rank)
      const unmeasured = reps.reduce(
        (s, r) => s + (r.warmup_ms ?? []).reduce((a, b) => a + b, 0) + (r.settle_ms ?? 0),
        0,
      );
      assert.ok(
        Math.abs((row.warmup_ms as number) - unmeasured) < 1e-6,
        `warm-up ${row.warmup_ms} ms = Σ warm-up + settle ${unmeasured} ms`,
      );
      assert.ok(
        row.ready_ms !== null && row.ready_ms >= 0 && (row.startup_ms as number) >= row.ready_ms,
        `start-up ${row.startup_ms} ≥ ranks ready ${row.ready_ms}`,
      );
    } finally {
      await dispatcher.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
