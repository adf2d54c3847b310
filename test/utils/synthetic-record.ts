/**
 * An experiment's record of N events planted in a Redis, for the scale test and bench: a real
 * submit of configs/ab.yaml (its spec, plan and blocks registered), a committed attempt and a
 * measured result per planned rep, and N stream entries spread over its blocks: each block's
 * block-start, a hello and a rep line per rank (world 2: the ranks' table is folded too, with
 * timed spans, warm-up and hashes), a command-style output line between reps, block-committed.
 * The entries are written with XADD directly (pipelined), as a worker before the output bounds
 * could leave them: the point is the size of the record, not how it got there.
 */
import type { Redis } from 'ioredis';
import { plannedReps, repKey } from '../../jobs/rep-ref.ts';
import { submitExperiment } from '../../orchestrator/experiment/submit.ts';
import { loadSpec } from '../../orchestrator/spec/load-spec.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { orchKeys } from '../../store/keys.ts';

const SPEC = 'configs/ab.yaml';
const WORLD = 2;
const HASH = '0123456789abcdef';

export async function plantRecord(redis: Redis, prefix: string, events: number): Promise<string> {
  const loaded = loadSpec(SPEC);
  const { id } = await submitExperiment({ redis, prefix, loaded });
  const exp = (await new ExperimentStore(redis, prefix).get(id))!;
  const keys = orchKeys(prefix);
  const blocks = exp.plan.blocks.map((b) => b.index);
  for (const block of blocks) {
    await redis.hset(keys.commits(id), String(block), JSON.stringify({ attempt: 1, epoch: 1, host: 'h' }));
    for (const r of plannedReps(exp.plan, block)) {
      const step_ms = Array.from({ length: 8 }, (_, k) => 0.4 + ((block * 31 + r.position * 7 + k) % 13) / 100);
      await redis.hset(
        keys.results(id),
        repKey(r),
        JSON.stringify({ experiment: id, ...r, attempt: 1, epoch: 1, step_ms, backend: 'cpu', mode: 'graph' }),
      );
    }
  }
  const perBlock = Math.ceil(events / blocks.length);
  let left = events;
  let pipe = redis.pipeline();
  let queued = 0;
  const add = async (block: number, card: string, rank: number | '', event: unknown) => {
    if (left <= 0) return;
    left--;
    pipe.xadd(
      keys.events(id),
      '*',
      'block',
      String(block),
      'attempt',
      '1',
      'epoch',
      '1',
      'host',
      'h',
      'card',
      card,
      'rank',
      String(rank),
      'event',
      JSON.stringify(event),
    );
    if (++queued >= 2000) {
      await pipe.exec();
      pipe = redis.pipeline();
      queued = 0;
    }
  };
  let t = 1_000_000_000;
  for (const block of blocks) {
    const budget = Math.min(perBlock, left);
    let used = 0;
    const emit = async (card: string, rank: number | '', event: unknown) => {
      used++;
      await add(block, card, rank, event);
    };
    await emit('', '', { v: 1, type: 'worker', event: 'block-start', cards: ['cpu:0', 'cpu:1'], sequence: [] });
    for (let r = 0; r < WORLD; r++) {
      await emit(`cpu:${r}`, r, {
        v: 1,
        type: 'hello',
        backend: 'cpu',
        device: 'cpu',
        sm: null,
        sms: 0,
        driver: 'none',
        features: FEATURES,
        version: '1.0',
        pid: 100 + r,
        world: WORLD,
        rank: r,
        final: true,
      });
    }
    for (let i = 0; used < budget - 1; i++) {
      const arm = i % 2 === 0 ? 'eager' : 'graph_pdl';
      for (let r = 0; r < WORLD && used < budget - 1; r++) {
        const step_ms = Array.from({ length: 8 }, (_, k) => 0.4 + ((i + k + r) % 11) / 100);
        await emit(`cpu:${r}`, r, {
          v: 1,
          type: 'rep',
          id: `b${block}-${i}`,
          arm,
          workload: 'chain',
          backend: 'cpu',
          mode: 'graph',
          warmup: 2,
          steps: 8,
          step_ms,
          warmup_ms: [0.5, 0.5],
          settle_ms: 0.45,
          launches_per_step: 64,
          dispatches_per_step: 1,
          collectives_per_step: 1,
          rank: r,
          world: WORLD,
          nodes: 64,
          hashes: [HASH, HASH],
          unsupported: [],
          t_start_ns: t,
          t_end_ns: t + 5e6,
          final: true,
        });
        for (let k = 0; k < 2 && used < budget - 1; k++)
          await emit(`cpu:${r}`, r, {
            v: 1,
            type: 'output',
            id: `b${block}-${i}`,
            stream: 'stdout',
            line: `step ${k} of request b${block}-${i}: ok, nothing to see here`,
          });
      }
      t += 6e6;
    }
    await emit('', '', { v: 1, type: 'worker', event: 'block-committed', measured: 1, not_run: 0 });
  }
  if (queued > 0) await pipe.exec();
  return id;
}

const FEATURES = { graph: true, pdl: false, overlap: false, collectives: true };
