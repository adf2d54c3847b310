/**
 * The checkout's own build (a command spec with `workload.build` and no `builds:`) is made by
 * the build phase too, before any card is leased (orchestrator/scheduler/build-phase.ts):
 *
 * - the checkout's uncommitted build.sh exits 1 (the working tree is built, dirty diff and all,
 *   not its commit): `orch submit` exits 2 (BUILD_FAILED is the user's input) with the build's
 *   command, directory and log tail; no block was ever granted (attempt 0, no block-start
 *   event), every planned rep is recorded not run with that reason;
 * - a build that passes, its `workload.build.dir` relative: resolved on the worker (against its
 *   cwd) by the build phase as by the rank path, so the phase built it and the rank's build is
 *   a cache hit of the same key; every block granted after the phase's build ended.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { type StreamEvent, workerEventOf } from '../../jobs/stream-event.ts';
import type { WorkerEvent } from '../../jobs/worker-event.ts';
import { type SummaryJson, SummaryJsonSchema } from '../../orchestrator/results/summary-schema.ts';
import { importJsonl } from '../../store/event-log.ts';
import { gitCheckout } from '../build/build-helpers.ts';
import { speedySpec } from '../command/speedy-spec.ts';
import { type OrchRun, runOrch } from '../utils/orch-run.ts';
import { freshBuildDir } from './planted-repo.ts';

interface Submitted extends OrchRun {
  ms: number;
  summary: SummaryJson;
  events: StreamEvent[];
}

/** `orch submit --watch` (the embedded default) of `spec`, from `cwd`; its summary and event stream. */
async function submit(spec: string, cwd: string): Promise<Submitted> {
  const dir = mkdtempSync(join(tmpdir(), 'orch-checkout-build-'));
  const file = join(dir, 'checkout.yaml');
  writeFileSync(file, spec);
  const results = join(dir, 'results');
  const t0 = Date.now();
  const r = await runOrch(['submit', file, '--results', results, '--watch'], { ORCH_BUILD_DIR: freshBuildDir() }, cwd);
  const ms = Date.now() - t0;
  const [id] = readdirSync(results);
  assert.ok(id !== undefined, `no results: exit ${r.code}: ${r.output}`);
  const summary = SummaryJsonSchema.parse(JSON.parse(readFileSync(join(results, id, 'summary.json'), 'utf8')));
  const events: StreamEvent[] = [];
  for await (const e of importJsonl(join(results, id, 'events.jsonl'))) events.push(e);
  return { ...r, ms, summary, events };
}

/** The worker events `name` of the stream, each with its entry (id, block). */
const worker = <N extends WorkerEvent['event']>(events: StreamEvent[], name: N) =>
  events.flatMap((e) => {
    const event = workerEventOf(e, name);
    return event === null ? [] : [{ ...e, event }];
  });

describe("the checkout's build before any card time", () => {
  test('its uncommitted build.sh exits 1: exit 2 with the command and log tail, no block granted, every rep not run', async () => {
    const src = gitCheckout('cmd-speedy');
    // the commit's build.sh builds; the working tree's fails: only a build of the dirty checkout fails
    writeFileSync(
      join(src, 'build.sh'),
      'echo "orch-test: the uncommitted build.sh of this checkout fails" >&2\nexit 1\n',
    );
    const r = await submit(speedySpec({ dir: src, reps: 2, steps: 3 }), src);
    console.log(`orch submit exited ${r.code} after ${r.ms} ms; its output:\n${r.output}`);
    assert.equal(r.code, 2, "a build failure is the user's input (jobs/error-codes.ts BUILD_FAILED): exit 2");
    const message = new RegExp(
      `a build failed on \\S+ before any card was leased to the experiment: BUILD_FAILED: workload\\.build\\.cmd: the build "sh build\\.sh" in ${src.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} exited 1 after [0-9.]+ s; last lines of \\S+:\\n  \\| orch-test: the uncommitted build\\.sh of this checkout fails`,
    );
    assert.match(r.output, message);

    const s = r.summary;
    assert.equal(s.state, 'failed');
    assert.match(s.reason ?? '', message);
    // never granted: no attempt, no grant time
    assert.ok(s.blocks.length > 0);
    for (const b of s.blocks) {
      assert.equal(b.phase, 'failed');
      assert.equal(b.attempt, 0, `block ${b.block} was never granted`);
      assert.deepEqual(b.attempts, []);
      assert.equal(b.granted_at, null);
    }
    assert.equal(worker(r.events, 'block-start').length, 0, 'no block-start event');
    assert.ok(
      r.events.every((e) => e.block === -1),
      'every event is of the build phase (block -1), none of a block',
    );
    const [start] = worker(r.events, 'build-start');
    assert.equal(
      start?.event.commit,
      (await import('node:child_process'))
        .execFileSync('git', ['rev-parse', 'HEAD'], { cwd: src, encoding: 'utf8' })
        .trim(),
      "the checkout's commit",
    );
    assert.ok(
      worker(r.events, 'build-end').some((e) => e.event.ok === false),
      'the failed build is on the stream',
    );

    const acc = s.accounting;
    assert.equal(
      acc.planned,
      s.plan.blocks.reduce((n: number, b: { sequence: string[] }) => n + b.sequence.length, 0),
    );
    assert.ok(acc.planned > 0);
    assert.equal(acc.measured, 0);
    assert.equal(acc.not_run, acc.planned);
    assert.deepEqual(acc.unaccounted, []);
    for (const [field, fate] of Object.entries(acc.reps) as [string, { fate: string; reason: string }][]) {
      assert.equal(fate.fate, 'not_run', field);
      assert.match(
        fate.reason,
        /^not run: a build failed on \S+ before any card was leased to the experiment: BUILD_FAILED: workload\.build\.cmd: the build "sh build\.sh" in \S+ exited 1/,
        field,
      );
    }
  });

  test("a build that passes, its dir relative to the worker's cwd: built by the build phase, the rank build cached, no block granted before", async () => {
    const src = gitCheckout('cmd-speedy');
    // dirty: the key carries the diff, and the phase and the rank compute it alike
    writeFileSync(
      join(src, 'build.sh'),
      `${readFileSync(join(src, 'build.sh'), 'utf8')}echo "orch-test: an uncommitted line"\n`,
    );
    // the spec file lives elsewhere: `src` means <worker cwd>/src, as the rank path resolves it
    const r = await submit(speedySpec({ dir: 'src', reps: 2, steps: 3 }), dirname(src));
    // the exit code is the verdict's (two pairs on a loaded box: any of them); the run must have ended done
    const s = r.summary;
    assert.equal(s.state, 'done', `exit ${r.code}: ${s.reason}: ${r.output}`);
    assert.equal(s.accounting.measured, s.accounting.planned);

    const phase = worker(r.events, 'build-end').filter((e) => e.block === -1);
    const rank = worker(r.events, 'build-end').filter((e) => e.block >= 0);
    console.log(
      `orch submit exited ${r.code} after ${r.ms} ms; build phase: ${JSON.stringify(phase.map((e) => e.event))}; rank builds: ${JSON.stringify(rank.map((e) => e.event))}`,
    );
    assert.equal(phase.length, 1);
    assert.equal(phase[0]!.event.outcome, 'built', 'the build phase built the checkout');
    assert.ok(rank.length >= 1, 'the rank path asked for the build');
    for (const e of rank) {
      assert.equal(e.event.outcome, 'cached', 'the rank build is a cache hit');
      assert.equal(e.event.key, phase[0]!.event.key, 'of the key the phase built');
    }
    const hellos = r.events.flatMap((e) =>
      typeof e.event === 'object' && e.event?.type === 'hello' && e.event.backend === 'command' ? [e.event] : [],
    );
    assert.ok(hellos.length >= 1);
    for (const h of hellos) assert.equal(h.build?.outcome, 'cached');
    // every block granted after the phase's build-end reached the stream (its entry id's ms:
    // the worker flushes it before its build job completes, and the grant waits for that)
    const builtAt = Number(phase[0]!.id.split('-')[0]);
    const after = s.blocks.map((b) => (b.granted_at ?? Number.NaN) - builtAt);
    console.log(`blocks granted ${after.join(', ')} ms after the build phase's build-end`);
    for (const ms of after) assert.ok(ms >= 0, 'no block granted before the checkout was built');
  });
});
