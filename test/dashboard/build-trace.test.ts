/**
 * Builds in the trace: a command workload that builds, run by `orch submit` (the embedded
 * default: a private redis-server, the scheduler and a real worker), puts its build events on
 * the experiment's stream, and `orch trace` draws them as slices on the host's worker track:
 * the build with its key, commit and outcome, the wait for the host build lock inside it (the
 * build phase's, before any lease; the rank's own ensure is then a cache hit). A
 * second run of the same build key finds it cached: a build slice without a wait.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { type WorkerEvent, WorkerEventSchema } from '../../jobs/worker-event.ts';
import { gitCheckout } from '../build/build-helpers.ts';
import { runOrch } from '../cli/run-orch.ts';
import { speedySpec } from '../command/speedy-spec.ts';
import { ChromeTraceSchema } from './trace-schema.ts';

interface Run {
  id: string;
  /** the build phase's build events (block -1: before any lease) */
  builds: WorkerEvent[];
  /** the rank path's (a block's): a cache hit of what the phase built */
  rankBuilds: WorkerEvent[];
  trace: ReturnType<typeof ChromeTraceSchema.parse>;
}

function submitAndTrace(spec: string, buildDir: string): Run {
  const dir = mkdtempSync(join(tmpdir(), 'orch-build-trace-'));
  const file = join(dir, 'speedy.yaml');
  writeFileSync(file, spec);
  const results = join(dir, 'results');
  const env = { ORCH_BUILD_DIR: buildDir, ORCH_LOG: 'warn', REDIS_URL: '' };
  const s = runOrch(['submit', file, '--results', results], env);
  // the exit code is the verdict's (two reps: any); the run itself must have ended done
  const [id] = readdirSync(results);
  assert.ok(id !== undefined, `no results: exit ${s.status}: ${s.stderr}`);
  assert.equal(JSON.parse(readFileSync(join(results, id, 'summary.json'), 'utf8')).state, 'done', s.stderr);
  const events = readFileSync(join(results, id!, 'events.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { block: number; event: unknown });
  const buildsOf = (phase: boolean) =>
    events.flatMap((e) => {
      const r = WorkerEventSchema.safeParse(e.event);
      return r.success && r.data.event.startsWith('build-') && (e.block === -1) === phase ? [r.data] : [];
    });
  const [builds, rankBuilds] = [buildsOf(true), buildsOf(false)];
  const t = runOrch(['trace', id!, '--from-results', '--results', results], env);
  assert.equal(t.status, 0, t.stderr);
  return { id: id!, builds, rankBuilds, trace: ChromeTraceSchema.parse(JSON.parse(t.stdout)) };
}

type Slice = Extract<Run['trace']['traceEvents'][number], { ph: 'X' }>;
const slice = (r: Run, name: string): Slice | undefined =>
  r.trace.traceEvents.find((e): e is Slice => e.ph === 'X' && e.name === name);

const workerTrack = (r: Run) => {
  const m = r.trace.traceEvents.find(
    (e) => e.ph === 'M' && e.name === 'process_name' && String(e.args?.name).endsWith('/worker'),
  );
  assert.ok(m, 'a worker track');
  return m.pid;
};

test('a command workload that builds: build slices on the host track, from the stream', () => {
  const src = gitCheckout('cmd-speedy');
  const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: src, encoding: 'utf8' }).trim();
  const buildDir = mkdtempSync(join(tmpdir(), 'orch-builds-'));
  const spec = speedySpec({ dir: src, reps: 2, steps: 3 });

  const first = submitAndTrace(spec, buildDir);
  assert.deepEqual(
    first.builds.map((b) => b.event),
    ['build-start', 'build-wait', 'build-end'],
    JSON.stringify(first.builds),
  );
  const [start, wait, end] = first.builds as [
    Extract<WorkerEvent, { event: 'build-start' }>,
    Extract<WorkerEvent, { event: 'build-wait' }>,
    Extract<WorkerEvent, { event: 'build-end' }>,
  ];
  assert.match(start.key, /^[0-9a-f]{64}$/);
  assert.equal(wait.position, 1, 'alone in line for the host build lock (the worker mirrors the line to Redis)');
  assert.equal(end.outcome, 'built');
  assert.equal(end.ok, true);
  assert.ok(end.ms >= end.wait_ms);
  const pid = workerTrack(first);
  const built = slice(first, `build ${start.key.slice(0, 12)}`);
  assert.ok(built, 'a build slice');
  assert.equal(built.pid, pid, 'on the host worker track');
  assert.equal(built.args?.outcome, 'built');
  assert.equal(built.args?.commit, start.commit);
  assert.equal(start.commit, commit, 'the commit of the build directory');
  const lockWait = slice(first, 'wait for build lock #1');
  assert.ok(lockWait && lockWait.pid === pid, 'the lock wait inside it');
  assert.ok(lockWait.ts >= built.ts && lockWait.ts + lockWait.dur <= built.ts + built.dur, 'nested in the build slice');
  // the checkout was built by the build phase before any lease: the rank's build is a cache hit
  assert.deepEqual(
    first.rankBuilds.map((b) => [b.event, 'outcome' in b ? b.outcome : null]),
    [
      ['build-start', null],
      ['build-end', 'cached'],
    ],
  );

  const again = submitAndTrace(spec, buildDir);
  assert.deepEqual(
    again.builds.map((b) => b.event),
    ['build-start', 'build-end'],
  );
  assert.deepEqual(
    again.rankBuilds.map((b) => b.event),
    ['build-start', 'build-end'],
  );
  const cached = slice(again, `build ${start.key.slice(0, 12)}`);
  assert.equal(cached?.args?.outcome, 'cached');
  assert.ok(
    !again.trace.traceEvents.some((e) => e.name.startsWith('wait for build lock')),
    'a cached build waits for no lock',
  );
});
