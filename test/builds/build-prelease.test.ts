/**
 * Builds as arms are built before any card is leased (orchestrator/scheduler/build-phase.ts):
 *
 * - a commit whose build fails: `orch submit` (the embedded default) exits with the registry's
 *   code of BUILD_FAILED (user input: 2) and one message naming the build, its ref and commit,
 *   the command and the log's last line; no block was ever granted (no attempt, no block-start
 *   event), every planned rep is recorded not run with that reason, nothing measured;
 * - a slow build (3 s): no block of its experiment is granted before its build job ended on the
 *   host, while another experiment's blocks run on the one card meanwhile; the rank's build is
 *   then a cache hit.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { readEvents } from '../../orchestrator/results/collect-results.ts';
import { type CardSlot, planGrants } from '../../orchestrator/scheduler/grant-planner.ts';
import { ExperimentBuildStore } from '../../store/experiment-builds.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { orchKeys } from '../../store/keys.ts';
import { submitYaml } from '../orchestrator/in-process-scheduler.ts';
import { type Cluster, runOrch as runOrchIn, startCluster } from '../orchestrator/orch-cluster.ts';
import { runOrch } from '../utils/orch-run.ts';
import { waitFor } from '../utils/wait-for.ts';
import { freshBuildDir, type PlantedRepo, plantedRepo, plantedSpec } from './planted-repo.ts';

/** A branch `name` off main whose build.sh is `script` (the C program unchanged). */
function branchWithBuild(repo: PlantedRepo, name: string, script: string): string {
  repo.git('checkout', '-q', 'main');
  repo.git('checkout', '-qb', name);
  writeFileSync(join(repo.dir, 'build.sh'), script);
  repo.git('commit', '-qam', `build.sh: ${name}`);
  repo.git('checkout', '-q', 'main');
  return repo.git('rev-parse', name);
}

const ARMS = (other: string) => `  - { name: main, build: main }\n  - { name: ${other}, build: ${other} }`;
const BUILDS = (other: string) => `  main: { ref: main }\n  ${other}: { ref: ${other} }`;

describe('builds before any card time', () => {
  test('planner: a block whose builds are ready on no host takes no card and no reservation; the block behind it gets the card', () => {
    const cards: CardSlot[] = [{ id: 'c0', host: 'h1', backend: 'cpu', index: 0 }];
    const block = { ranks: 1, backend: 'any' as const, placement: 'host' as const, expectedMs: 60_000 };
    const waiting = [
      {
        ...block,
        key: 'building.b0',
        hosts: new Set<string>(),
        hostsWhy: 'waiting for its builds (building on h1 (attempt 1))',
      },
      { ...block, key: 'other.b0' },
    ];
    const d = planGrants({ now: 0, cards, busy: new Set(), running: [], waiting });
    assert.deepEqual(
      d.grants.map((g) => g.key),
      ['other.b0'],
    );
    assert.equal(d.why.get('building.b0'), 'waiting for its builds (building on h1 (attempt 1))');
    // once ready on h1, it is granted like any block
    const ready = planGrants({
      now: 0,
      cards,
      busy: new Set(),
      running: [],
      waiting: [{ ...waiting[0]!, hosts: new Set(['h1']) }, waiting[1]!],
    });
    assert.deepEqual(
      ready.grants.map((g) => g.key),
      ['building.b0'],
    );
  });

  test('a commit whose build fails: exit 2, the build, ref, commit, command and log tail named; no grant, every rep not run', async () => {
    const repo = plantedRepo();
    const commit = branchWithBuild(
      repo,
      'broken',
      'echo "orch-test: the deliberate build failure of this commit" >&2\nexit 1\n',
    );
    const file = join(repo.dir, 'broken.yaml');
    writeFileSync(
      file,
      plantedSpec({ name: 'broken-build', builds: BUILDS('broken'), arms: ARMS('broken'), reps: 2, blocks: 2 }),
    );
    const results = mkdtempSync(join(tmpdir(), 'orch-results-'));
    const t0 = Date.now();
    const r = await runOrch(['submit', file, '--results', results, '--watch'], { ORCH_BUILD_DIR: freshBuildDir() });
    const ms = Date.now() - t0;
    console.log(`orch submit exited ${r.code} after ${ms} ms; its output:\n${r.output}`);
    assert.equal(r.code, 2, "a build failure is the user's input (jobs/error-codes.ts BUILD_FAILED): exit 2");
    const message = new RegExp(
      `BUILD_FAILED: build "broken" \\(ref broken, commit ${commit}\\): workload\\.build\\.cmd: the build "sh build\\.sh" in \\S+ exited 1 after [0-9.]+ s; last lines of \\S+:\\n  \\| orch-test: the deliberate build failure of this commit`,
    );
    assert.match(r.output, message);

    const [id] = (await import('node:fs')).readdirSync(results);
    const dir = join(results, id!);
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'));
    assert.equal(summary.state, 'failed');
    assert.match(summary.reason, message);
    // never granted: no attempt, no gang, no grant time; no block ever started on a card
    for (const b of summary.blocks) {
      assert.equal(b.phase, 'failed');
      assert.equal(b.attempt, 0, `block ${b.block} was never granted`);
      assert.deepEqual(b.attempts, []);
      assert.equal(b.granted_at, null);
    }
    const events = readFileSync(join(dir, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    assert.equal(events.filter((e) => e.event?.event === 'block-start').length, 0, 'no block-start event');
    assert.ok(
      events.every((e) => e.block === -1),
      'every event is of the build phase (block -1), none of a block',
    );
    const ends = events.filter((e) => e.event?.event === 'build-end');
    assert.ok(
      ends.some((e) => e.event.ok === false),
      'the failed build is on the stream',
    );
    // every planned rep accounted as not run, with the build's reason; nothing measured
    const acc = summary.accounting;
    // 2 blocks of 2 reps of each arm (main, broken, and the A/A twin of main)
    assert.equal(
      acc.planned,
      summary.plan.blocks.reduce((n: number, b: { sequence: string[] }) => n + b.sequence.length, 0),
    );
    assert.equal(acc.planned, 2 * 2 * 3);
    assert.equal(acc.measured, 0);
    assert.equal(acc.not_run, acc.planned);
    assert.deepEqual(acc.unaccounted, []);
    for (const [field, fate] of Object.entries(acc.reps) as [string, { fate: string; reason: string }][]) {
      assert.equal(fate.fate, 'not_run', field);
      assert.match(
        fate.reason,
        /^not run: a build failed on \S+ before any card was leased to the experiment: BUILD_FAILED: build "broken"/,
        field,
      );
    }
  });

  describe('a slow build, beside another experiment', () => {
    let cluster: Cluster | null = null;
    after(async () => cluster?.stop());

    test('no block of it is granted before its build ended; the other experiment runs on the card meanwhile; the rank build is a cache hit', async () => {
      const repo = plantedRepo();
      branchWithBuild(repo, 'slow', 'set -e\nsleep 3\nmkdir -p out\ncc -O1 -o out/work work.c\n');
      process.env.ORCH_BUILD_DIR = freshBuildDir();
      cluster = await startCluster();
      const c = cluster;
      c.startServe();
      await c.startWorker({ cpuCards: 1, repMs: 250 });
      // submitted in this process one after the other (an orch submit process takes seconds to
      // start on a loaded machine): the slow one first, so without the build phase its block
      // would hold the card through the build while the other waited behind it
      const a = await submitYaml(
        c.redis,
        c.prefix,
        repo.dir,
        'slow',
        plantedSpec({ name: 'slow-build', builds: BUILDS('slow'), arms: ARMS('slow'), reps: 2, blocks: 1, steps: 5 }),
      );
      const b = await submitYaml(
        c.redis,
        c.prefix,
        repo.dir,
        'other',
        readFileSync('test/fixtures/specs/tiny-ab.yaml', 'utf8'),
      );
      const store = new ExperimentStore(c.redis, c.prefix);
      await waitFor(
        'both experiments ended',
        async () => {
          const s = await Promise.all([a, b].map((id) => store.state(id)));
          return s.every((x) => x === 'done' || x === 'failed' || x === 'cancelled') ? s : null;
        },
        { timeoutMs: 120_000, intervalMs: 200 },
      );
      assert.equal(await store.state(a), 'done', (await store.get(a))?.reason ?? '');
      assert.equal(await store.state(b), 'done', (await store.get(b))?.reason ?? '');

      const builds = await new ExperimentBuildStore(c.redis, c.prefix).read(a);
      const host = builds.hosts.get('h1');
      assert.equal(host?.state, 'ready');
      const readyAt = host.ended!;
      const granted = (await store.blocks(a)).map((x) => x.granted_at!);
      const others = (await store.blocks(b)).map((x) => x.granted_at!).sort((x, y) => x - y);
      console.log(
        `slow build: job ${host.since - (await store.get(a))!.created} ms after submit, ready after ${readyAt - host.since} ms; its block granted ${granted.map((g) => g - readyAt)} ms after; the other experiment's blocks granted at ${others.map((g) => g - host.since)} ms from the build's start`,
      );
      assert.ok(readyAt - host.since >= 3000, 'the build slept 3 s');
      for (const g of granted)
        assert.ok(g >= readyAt, 'no block of the slow experiment was granted before its build was ready');
      assert.ok(others[0]! < readyAt, 'the other experiment got the card while the build ran');

      const events = await readEvents(c.redis, orchKeys(c.prefix).events(a), {});
      const phase = events.filter((e) => e.block === -1 && typeof e.event === 'object' && e.event?.type === 'worker');
      const rank = events.filter(
        (e) =>
          e.block >= 0 && typeof e.event === 'object' && e.event?.type === 'worker' && e.event.event === 'build-end',
      );
      const built = phase
        .filter((e) => (e.event as { event: string }).event === 'build-end')
        .map((e) => e.event as { outcome: string; ms: number });
      console.log(`build phase: ${JSON.stringify(built)}; rank builds: ${JSON.stringify(rank.map((e) => e.event))}`);
      assert.ok(
        built.some((x) => x.outcome === 'built' && x.ms >= 3000),
        'the build phase built the slow commit',
      );
      assert.ok(rank.length >= 2, 'the rank path asked for both builds');
      for (const e of rank)
        assert.equal((e.event as { outcome: string }).outcome, 'cached', 'the rank build is a cache hit');
    });
  });

  describe('the host dies mid-build', () => {
    let cluster: Cluster | null = null;
    after(async () => cluster?.stop());

    test('its worker killed (-9) during the build: tried again as attempt 2 once the host is back, no block granted before, the experiment done', async () => {
      const repo = plantedRepo();
      const slowCommit = branchWithBuild(repo, 'slow', 'set -e\nsleep 4\nmkdir -p out\ncc -O1 -o out/work work.c\n');
      process.env.ORCH_BUILD_DIR = freshBuildDir();
      cluster = await startCluster();
      const c = cluster;
      c.startServe();
      const first = await c.startWorker({ cpuCards: 1, repMs: 100 });
      const file = join(repo.dir, 'slow.yaml');
      writeFileSync(
        file,
        plantedSpec({ name: 'host-dies', builds: BUILDS('slow'), arms: ARMS('slow'), reps: 2, blocks: 1, steps: 5 }),
      );
      const sub = await runOrchIn(['submit', file, '--no-wait'], c.env);
      assert.equal(sub.code, 0, sub.stderr);
      const id = sub.stdout.trim();
      const key = orchKeys(c.prefix).events(id);
      await waitFor(
        'the slow commit is building',
        async () =>
          (await readEvents(c.redis, key, {})).some(
            (e) =>
              typeof e.event === 'object' &&
              e.event?.type === 'worker' &&
              e.event.event === 'build-wait' &&
              e.block === -1,
          ) &&
          (await readEvents(c.redis, key, {})).some(
            (e) =>
              typeof e.event === 'object' &&
              e.event?.type === 'worker' &&
              e.event.event === 'build-start' &&
              e.event.commit === slowCommit,
          ),
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      await new Promise((r) => setTimeout(r, 500));
      const killedAt = Date.now();
      first.child.kill('SIGKILL');
      await first.exited;
      await c.startWorker({ cpuCards: 1, repMs: 100 });
      const store = new ExperimentStore(c.redis, c.prefix);
      await waitFor(
        'the experiment ended',
        async () => {
          const st = await store.state(id);
          return st === 'done' || st === 'failed' || st === 'cancelled' ? st : null;
        },
        { timeoutMs: 120_000, intervalMs: 200 },
      );
      assert.equal(await store.state(id), 'done', (await store.get(id))?.reason ?? '');
      const h = (await new ExperimentBuildStore(c.redis, c.prefix).read(id)).hosts.get('h1');
      console.log(
        `worker killed ${killedAt - (await store.get(id))!.created} ms after submit; build attempt ${h?.attempt} dispatched ${h!.since - killedAt} ms after the kill, ready ${h!.ended! - h!.since} ms later`,
      );
      assert.equal(h?.state, 'ready');
      assert.equal(h.attempt, 2, 'tried again as attempt 2');
      for (const b of await store.blocks(id)) {
        assert.ok(b.granted_at! >= h.ended!, 'no block granted before the build was ready');
        assert.equal(b.attempts.length, 1, 'the block ran once');
      }
    });
  });
});
