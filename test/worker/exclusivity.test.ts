/**
 * Two real `orch worker` processes, four cards, 40 one-rank blocks granted by the production
 * Scheduler, whose fixture ranks record their start and end: no two intervals on one card
 * overlap, every block ran (and committed) exactly once, at its first attempt.
 */

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { ResultStore } from '../../store/result-store.ts';
import { abSpec, startScheduler, submitYaml, waitEnded } from '../orchestrator/in-process-scheduler.ts';
import { freshPrefix } from '../utils/redis.ts';
import { useWorkerEnv } from '../utils/worker-env.ts';

describe('two workers, four cards, 40 blocks', () => {
  const env = useWorkerEnv('excl');

  test('no two rank intervals on one card overlap; every block ran once', async () => {
    const prefix = freshPrefix();
    const logFile = join(env.dir, 'ranks.jsonl');
    const common = { prefix, cards: 'cpu:0,cpu:1', env: { FIXTURE_LOG: logFile } };
    await Promise.all([env.spawn({ ...common, host: 'h1' }), env.spawn({ ...common, host: 'h2' })]);
    const blocks = Array.from({ length: 40 }, (_, i) => i);
    const sched = await startScheduler({ url: env.server.url, prefix, grantTtlMs: 3000 });
    const t0 = Date.now();
    let id: string;
    try {
      id = await submitYaml(env.redis, prefix, env.dir, 'excl', abSpec('excl', 40, 2));
      assert.equal(await waitEnded(env.redis, prefix, id, 60_000), 'done');
    } finally {
      await sched.stop();
    }
    const wall = Date.now() - t0;

    const states = await new ExperimentStore(env.redis, prefix).blocks(id);
    const failedAttempts = states.flatMap((b) => b.attempts).filter((a) => a.outcome !== 'committed');
    assert.deepEqual(failedAttempts, [], 'no attempt failed or was lost');
    assert.deepEqual(
      states.map((b) => [b.block, b.attempts.length]),
      blocks.map((b) => [b, 1]),
      'one attempt per block',
    );
    const commits = await new ResultStore(env.redis, { prefix }).commits(id);
    assert.equal(Object.keys(commits).length, 40);
    assert.equal(
      Object.keys(await new ResultStore(env.redis, { prefix }).results(id)).length,
      160,
      'every planned rep (2 arms × 2 reps × 40 blocks) measured',
    );

    type Ev = { ev: 'start' | 'end'; card: string; pid: number; t: number };
    const evs = readFileSync(logFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Ev);
    const byPid = new Map<number, { card: string; start?: number; end?: number }>();
    for (const e of evs) {
      const r = byPid.get(e.pid) ?? { card: e.card };
      r[e.ev] = e.t;
      byPid.set(e.pid, r);
    }
    assert.equal(byPid.size, 40, 'one rank process per block');
    const perCard = new Map<string, [number, number][]>();
    for (const r of byPid.values()) {
      assert.ok(r.start !== undefined && r.end !== undefined, `rank on ${r.card} recorded start and end`);
      perCard.set(r.card, [...(perCard.get(r.card) ?? []), [r.start, r.end]]);
    }
    assert.equal(perCard.size, 4, `all four cards used: ${[...perCard.keys()].join(', ')}`);
    let minGap = Infinity;
    for (const [card, iv] of perCard) {
      iv.sort((a, b) => a[0] - b[0]);
      for (let i = 1; i < iv.length; i++) {
        const gap = (iv[i] as [number, number])[0] - (iv[i - 1] as [number, number])[1];
        assert.ok(gap >= 0, `card ${card}: rank intervals overlap by ${-gap} ms`);
        minGap = Math.min(minGap, gap);
      }
    }
    console.log(
      `# 40 blocks on 4 cards in ${wall} ms; per card ${[...perCard.values()].map((v) => v.length).join('/')} blocks; smallest gap between ranks on one card ${minGap} ms`,
    );
  });
});
