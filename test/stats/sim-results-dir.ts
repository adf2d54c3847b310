/**
 * A simulated run written as a results directory (the files orchestrator/report/results-dir.ts
 * reads): summary.json with the plan, the real analysis of the simulated reps and the commit
 * records (each block's `started`), reps.jsonl with each committed rep and its one rank's answer
 * (`answered_ms`), and events.jsonl with each block's `block-start` worker event and one rep line
 * per rep; the times spaced by a planted block start-up and each rep's own time (its mean step
 * times its warmup + steps).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import type { AnalysisInput } from '../../orchestrator/stats/types.ts';

export interface SimTiming {
  startup_ms: number;
  warmup: number;
}

export function writeSimulatedResultsDir(dir: string, input: AnalysisInput, timing: SimTiming): void {
  mkdirSync(dir, { recursive: true });
  const analysis = analyzeExperiment(input);
  const events: unknown[] = [];
  const committed: unknown[] = [];
  const commits: Record<string, unknown> = {};
  let now = 1_700_000_000_000;
  const entry = (block: number, event: unknown) =>
    events.push({
      id: `${Math.round(now)}-0`,
      block,
      attempt: 1,
      epoch: 1,
      host: 'sim',
      card: 'cpu:0@sim',
      rank: 0,
      committed: true,
      event,
    });
  for (const b of input.plan.blocks) {
    entry(b.index, { v: 1, type: 'worker', event: 'block-start', cards: ['cpu:0@sim'], sequence: b.sequence });
    const started = now;
    now += timing.startup_ms;
    const reps = input.reps.filter((r) => r.block === b.index).sort((x, y) => x.position - y.position);
    for (const r of reps) {
      const mean = r.step_ms.reduce((s, x) => s + x, 0) / r.step_ms.length;
      now += mean * (timing.warmup + r.step_ms.length);
      const line = {
        v: 1,
        type: 'rep',
        id: `b${b.index}-a1-rep${r.position}`,
        arm: r.arm,
        workload: 'decode',
        backend: 'cpu',
        mode: 'eager',
        warmup: timing.warmup,
        steps: r.step_ms.length,
        step_ms: r.step_ms,
        launches_per_step: 1,
        dispatches_per_step: 1,
        collectives_per_step: 0,
        rank: 0,
        world: 1,
        nodes: null,
        hashes: [],
        unsupported: [],
        final: true,
      };
      entry(b.index, line);
      committed.push({ ...r, answers: [{ rank: 0, card: 'cpu:0@sim', host: 'sim', answered_ms: now, line }] });
    }
    entry(b.index, { v: 1, type: 'worker', event: 'block-committed', measured: reps.length, not_run: 0 });
    commits[String(b.index)] = { attempt: 1, epoch: 1, host: 'sim', started, committed: now };
  }
  const summary = {
    experiment: 'sim-prior',
    name: input.plan.name,
    hash: input.plan.hash,
    state: 'done',
    plan: input.plan,
    commits,
    accounting: null,
    analysis,
  };
  writeFileSync(join(dir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
  writeFileSync(join(dir, 'events.jsonl'), `${events.map((e) => JSON.stringify(e)).join('\n')}\n`);
  writeFileSync(join(dir, 'reps.jsonl'), committed.map((r) => `${JSON.stringify(r)}\n`).join(''));
}
