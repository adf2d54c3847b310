/**
 * A gang of 2 whose one rank exits non-zero: the other rank is killed at once, the block fails
 * with the rank, exit code and last error line in BullMQ's failedReason (the exact text), as an
 * UnrecoverableError for a deterministic exit code and a plain error for a signal; every planned
 * rep is reported failed with that reason and the leases are free.
 */

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { LeaseStore } from '../../store/lease-store.ts';
import { ResultStore } from '../../store/result-store.ts';
import { BareExperimentDispatcher, blockJob } from '../utils/block-jobs.ts';
import { rankPids, readEvents } from '../utils/events.ts';
import { isAlive } from '../utils/processes.ts';
import { freshPrefix } from '../utils/redis.ts';
import { useWorkerEnv } from '../utils/worker-env.ts';

describe('a rank of a gang fails', () => {
  const env = useWorkerEnv('gang');

  async function runGang(host: string, fail: string) {
    const prefix = freshPrefix();
    const log = join(env.dir, `${host}.jsonl`);
    // request 1 is the identity gate of arm B; rank 1's 3rd request is the 2nd rep
    const _w = await env.spawn({
      prefix,
      host,
      cards: 'cpu:0,cpu:1',
      env: { FIXTURE_LOG: log, FIXTURE_FAIL: fail, FIXTURE_REP_MS: '150' },
    });
    const leases = new LeaseStore(env.redis, { prefix });
    const dispatcher = new BareExperimentDispatcher(env.redis, { prefix, pollMs: 20 });
    const cards = [`cpu:0@${host}`, `cpu:1@${host}`];
    const g = await leases.acquireGang({ cards, owner: host, ttlMs: 5000, experiment: 'g', block: 0 });
    assert.ok(g.granted);
    const job = blockJob({ experiment: 'g', block: 0, attempt: 1, epoch: g.epoch, host, cards });
    await dispatcher.dispatch(job);
    const end = await dispatcher.waitEnd(job, { timeoutMs: 30_000 });
    await dispatcher.close();
    const ranks = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { ev: string; rank: number; pid: number; t: number });
    const pids = rankPids(await readEvents(env.redis, prefix, 'g'), 1);
    return { end, ranks, pids, leases, results: new ResultStore(env.redis, { prefix }), cards, job };
  }

  test('rank 1 exits with code 3: rank 0 killed, UnrecoverableError with rank, exit code and last error line', async () => {
    const { end, ranks, pids, leases, results, cards } = await runGang('f1', '1:3:3');
    const pid1 = ranks.find((r) => r.ev === 'start' && r.rank === 1)?.pid;
    assert.deepEqual(end, {
      state: 'failed',
      jobId: 'g.b0-a1-f1',
      unrecoverable: true,
      reason: `rank 1 on card cpu:1@f1 (pid ${pid1}) exited with code 3, signal none; last error: INTERNAL: fixture rank 1 failing at request 3`,
    });
    assert.equal(pids.length, 2);
    assert.ok(
      pids.every((p) => !isAlive(p)),
      'both ranks are gone',
    );
    assert.deepEqual(
      ranks.filter((r) => r.rank === 0).map((r) => r.ev),
      ['start'],
      'rank 0 was killed (it never reached its orderly end)',
    );
    assert.deepEqual(await leases.held(cards), []);
    const failed = await results.failed('g');
    assert.deepEqual(Object.keys(failed).sort(), ['0/A/0', '0/A/1', '0/B/0', '0/B/1']);
    assert.equal(failed['0/A/1']?.reason, `attempt 1 failed: ${end.state === 'failed' ? end.reason : ''}`);
    assert.deepEqual(await results.results('g'), {});
  });

  test('rank 0 dies of SIGSEGV: a plain (retryable) failure naming the signal', async () => {
    const { end, ranks } = await runGang('f2', '0:2:SIGSEGV');
    const pid0 = ranks.find((r) => r.ev === 'start' && r.rank === 0)?.pid;
    assert.deepEqual(end, {
      state: 'failed',
      jobId: 'g.b0-a1-f2',
      unrecoverable: false,
      reason: `rank 0 on card cpu:0@f2 (pid ${pid0}) was killed by SIGSEGV; last error: INTERNAL: fixture rank 0 failing at request 2`,
    });
  });
});
