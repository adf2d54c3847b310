/**
 * SIGTERM to a worker mid-block: the rep in flight finishes, the measured reps are committed, the
 * rest are reported "not run" in the failed hash (every planned rep ends as exactly one of the
 * two), the leases are released at once (not left to expire), the ranks end in order, exit 0.
 * The same when the SIGTERM reaches the ranks too, as slurmstepd sends it to every process of a
 * job step (scancel, the time limit) and systemd to every process of a unit: the ranks ignore it
 * (worker/rank-process.ts) and end when the worker closes them.
 */

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { sequenceReps } from '../../jobs/block-job.ts';
import { repKey } from '../../jobs/rep-ref.ts';
import { LeaseStore } from '../../store/lease-store.ts';
import { ResultStore } from '../../store/result-store.ts';
import { BareExperimentDispatcher, blockJob } from '../utils/block-jobs.ts';
import { readEvents, waitForEvents } from '../utils/events.ts';
import { freshPrefix } from '../utils/redis.ts';
import { useWorkerEnv } from '../utils/worker-env.ts';

describe('graceful stop', () => {
  const env = useWorkerEnv('stop');

  for (const [to, signalRanks] of [
    ['the worker', false],
    ['the worker and every rank at once (a Slurm step, a systemd unit)', true],
  ] as const)
    test(`SIGTERM to ${to}: rep in flight finished, measured reps committed, the rest not run, leases released`, async () => {
      const prefix = freshPrefix();
      const log = join(env.dir, `ranks-${signalRanks ? 'all' : 'worker'}.jsonl`);
      const heartbeatMs = 5000; // leases live 10 s: freed at once only by the release
      const worker = await env.spawn({
        prefix,
        host: 's1',
        cards: 'cpu:0,cpu:1',
        heartbeatMs,
        env: { FIXTURE_REP_MS: '400', FIXTURE_LOG: log },
      });
      const leases = new LeaseStore(env.redis, { prefix });
      const results = new ResultStore(env.redis, { prefix });
      const dispatcher = new BareExperimentDispatcher(env.redis, { prefix, pollMs: 20 });
      try {
        const cards = ['cpu:0@s1', 'cpu:1@s1'];
        const g = await leases.acquireGang({ cards, owner: 's1', ttlMs: 10_000, experiment: 's', block: 0 });
        assert.ok(g.granted);
        const sequence = ['A', 'B', 'B', 'A', 'A', 'B', 'B', 'A'];
        const job = blockJob({ experiment: 's', block: 0, attempt: 1, epoch: g.epoch, host: 's1', cards, sequence });
        await dispatcher.dispatch(job);
        await waitForEvents(
          env.redis,
          prefix,
          's',
          'two reps',
          (e) => e.filter((x) => x.event.type === 'rep' && x.rank === '0').length >= 2,
          20_000,
        );
        const t0 = Date.now();
        worker.child.kill('SIGTERM');
        if (signalRanks) {
          const started = readFileSync(log, 'utf8')
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l) as { ev: string; pid: number })
            .filter((e) => e.ev === 'start');
          assert.equal(started.length, 2);
          for (const r of started) process.kill(r.pid, 'SIGTERM');
        }
        const exit = await worker.exited;
        const stopMs = Date.now() - t0;
        assert.deepEqual(exit, { code: 0, signal: null });
        assert.deepEqual(await leases.held(cards), [], 'leases released, not left to expire');

        const end = await dispatcher.waitEnd(job, { timeoutMs: 10_000 });
        assert.equal(end.state, 'completed', JSON.stringify(end));
        const outcome = (end as { outcome: { measured: number; not_run: number } }).outcome;
        const repLines = (await readEvents(env.redis, prefix, 's')).filter(
          (e) => e.event.type === 'rep' && e.rank === '0',
        );
        assert.equal(outcome.measured, repLines.length, 'every rep that started was finished and committed');
        assert.ok(
          outcome.measured >= 2 && outcome.measured < sequence.length,
          `stopped mid-block (${outcome.measured} measured)`,
        );
        assert.equal(outcome.measured + outcome.not_run, sequence.length);

        const committed = await results.results('s');
        const failed = await results.failed('s');
        for (const p of sequenceReps(sequence)) {
          const f = repKey({ block: 0, ...p });
          assert.ok(f in committed !== f in failed, `rep ${f} is exactly one of measured / failed`);
          if (p.position >= outcome.measured) {
            assert.deepEqual(failed[f], {
              block: 0,
              arm: p.arm,
              rep: p.rep,
              position: p.position,
              reason: 'not run: the worker of host s1 was stopped (SIGTERM) before this rep (attempt 1)',
              attempt: 1,
            });
          }
        }
        const ends = readFileSync(log, 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as { ev: string })
          .filter((e) => e.ev === 'end');
        assert.equal(ends.length, 2, 'both ranks ended in order (stdin closed), not killed');
        console.log(
          `# SIGTERM to ${to}: ${outcome.measured} reps measured, ${outcome.not_run} not run, worker exited after ${stopMs} ms`,
        );
      } finally {
        await dispatcher.close();
      }
    });
});
