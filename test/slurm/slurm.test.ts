/**
 * orch workers inside real Slurm allocations (.ci/slurm-up: slurmctld, slurmd, fake GPU GRES),
 * each started by `orch slurm up` under real srun: an experiment end to end, scancel mid-block,
 * an allocation that ends mid-experiment. Each fault prints the chaos table's row (planned,
 * measured, failed with a reason, measured twice) and asserts nothing lost, nothing measured twice.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { openHistory } from '../../history/open-history.ts';
import { runNight } from '../../orchestrator/nightly/nightly-run.ts';
import { renderHistory } from '../../orchestrator/nightly/render-history.ts';
import { compareResults } from '../../orchestrator/report/compare-results.ts';
import type { WithProvenance } from '../../orchestrator/report/render-provenance.ts';
import { writeResults } from '../../orchestrator/results/write-results.ts';
import { findJob } from '../../orchestrator/slurm/slurm-run-dir.ts';
import { CardRegistry } from '../../store/card-registry.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { GangStaging } from '../../store/gang-staging.ts';
import { advertiseAddress } from '../../worker/advertise-address.ts';
import { GRAPHRT, skipWithoutBinary } from '../native/graphrt.ts';
import { abSpec, submitYaml, waitEnded } from '../orchestrator/in-process-scheduler.ts';
import { readEvents } from '../utils/events.ts';
import { suiteSkip } from '../utils/required-suite.ts';
import { waitFor } from '../utils/wait-for.ts';
import { ledger, type SlurmWorld, slurmMissing, startSlurmWorld } from './slurm-harness.ts';

const missing = suiteSkip('slurm', slurmMissing());

/** Two ranks across hosts on graphrt's CPU backend, their allreduce through rank 0's rendezvous. */
const SPREAD_SPEC = [
  'name: slurm-spread',
  'design: ab',
  'workload: { runtime: native, backend: cpu, kind: decode, params: { layers: 2, kernels_per_layer: 12, hidden: 32, max_pos: 16 }, warmup: 1, steps: 3 }',
  'toggles: [graph, allreduce]',
  'arms:',
  '  - { name: eager, toggles: { allreduce: true } }',
  '  - { name: graph, toggles: { graph: true, allreduce: true } }',
  'reps: 2',
  'blocks: { count: 1, ranks: 2, placement: spread }',
  'gates: { identity: { replays: 3 }, aa: false }',
  'metric: { name: ms_per_step, better: lower }',
  '',
].join('\n');

describe('orch workers under Slurm', { skip: missing }, () => {
  let w: SlurmWorld;
  before(async () => (w = await startSlurmWorld()));
  after(async () => w?.stop());

  test('orch slurm up: the workers register the GRES cards with the job as provenance, run an experiment, and down drains them (the job ends with its workers)', async () => {
    const job = await w.up({ gpus: 2, time: '10', repMs: 20 });
    const hosts = await w.registered(job, 2);
    const node = execFileSync('hostname', ['-s'], { encoding: 'utf8' }).trim();
    assert.equal(hosts.length, 1);
    assert.equal(hosts[0]!.host, `${node}-slurm${job}`);
    // fake GRES: the cpu cards of the GRES indexes Slurm gave the step
    assert.deepEqual(hosts[0]!.cards, [`cpu:0@${node}-slurm${job}`, `cpu:1@${node}-slurm${job}`]);
    assert.deepEqual(
      { ...hosts[0]!.slurm, end: typeof hosts[0]!.slurm!.end },
      { job, nodes: node, partition: 'debug', node, end: 'number' },
    );
    // the credentials reach the job as files only: neither Slurm's view of the job nor its script holds them
    const shown =
      execFileSync('scontrol', ['show', 'job', '-d', job], { encoding: 'utf8' }) +
      execFileSync('scontrol', ['write', 'batch_script', job, '-'], { encoding: 'utf8' });
    assert.ok(!shown.includes(w.srv.password!), 'the Redis password is not in scontrol show job or the batch script');
    assert.ok(
      !shown.includes(process.env.ORCH_CLUSTER_SECRET!),
      'the cluster secret is not in scontrol show job or the batch script',
    );
    // each worker read its own copies and unlinked them: no credential left in a plain file
    const runDir = findJob(join(w.dir, 'runs'), job).dir;
    assert.deepEqual(
      readdirSync(runDir).filter((f) => /^(redis-url|secret)/.test(f)),
      [],
      readdirSync(runDir).join(', '),
    );

    const status = await w.orch(['status', '--job', job]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`job ${job}: RUNNING on ${node}`));
    assert.match(
      status.stdout,
      new RegExp(
        `${node}-slurm${job}: heartbeat alive; cards cpu:0@${node}-slurm${job}, cpu:1@${node}-slurm${job}; node ${node}, partition debug`,
      ),
    );

    const id = await submitYaml(w.redis, w.prefix, w.dir, 'slurm-e2e', abSpec('slurm-e2e', 4, 2));
    assert.equal(await waitEnded(w.redis, w.prefix, id, 120_000), 'done');
    const row = await ledger(w, id, 'none (an experiment inside the allocation)');
    assert.deepEqual(row.unaccounted, []);
    assert.equal(row.measured, row.planned);
    assert.equal(row.twice, 0);
    const hostsSeen = new Set((await readEvents(w.redis, w.prefix, id)).map((e) => e.host).filter(Boolean));
    assert.deepEqual([...hostsSeen], [`${node}-slurm${job}`]);
    // the report's provenance names the allocation
    const written = await writeResults(w.redis, w.prefix, id, join(w.dir, 'results'));
    assert.deepEqual((written.analysis as WithProvenance).provenance?.slurm, [
      { host: `${node}-slurm${job}`, node, job, nodes: node, partition: 'debug' },
    ]);
    assert.match(
      written.report,
      new RegExp(`^- host ${node}-slurm${job}: Slurm job ${job} \\(nodes ${node}, partition debug\\)$`, 'm'),
    );
    // orch compare: the same nodes compare; a run on another node is refused unless allowed
    assert.doesNotMatch(compareResults(written.dir, written.dir).text, /Slurm nodes/);
    const moved = join(w.dir, 'results-other-node');
    cpSync(written.dir, moved, { recursive: true });
    const summary = JSON.parse(readFileSync(join(moved, 'summary.json'), 'utf8'));
    summary.analysis.provenance.slurm[0].node = 'gpu99';
    writeFileSync(join(moved, 'summary.json'), JSON.stringify(summary));
    assert.throws(
      () => compareResults(written.dir, moved),
      new RegExp(
        `ran on different Slurm nodes: ${node} .* vs gpu99 .*, and the spec of ${written.dir} and of ${moved} does not allow`,
      ),
    );
    assert.match(
      compareResults(written.dir, moved, 0.05, { allowNodeChange: true }).text,
      new RegExp(`^- Slurm nodes: ${node} vs gpu99 \\(compared by --allow-node-change\\)$`, 'm'),
    );
    // the spec's across_runs.allow_node_change: both runs' specs must allow it
    writeFileSync(
      join(moved, 'spec.yaml'),
      `${readFileSync(join(moved, 'spec.yaml'), 'utf8')}across_runs: { allow_node_change: true }\n`,
    );
    assert.throws(
      () => compareResults(written.dir, moved),
      new RegExp(`the spec of ${written.dir} does not allow comparing across them`),
    );
    const allowing = join(w.dir, 'results-allowing');
    cpSync(written.dir, allowing, { recursive: true });
    writeFileSync(join(allowing, 'spec.yaml'), readFileSync(join(moved, 'spec.yaml'), 'utf8'));
    assert.match(
      compareResults(allowing, moved).text,
      new RegExp(`^- Slurm nodes: ${node} vs gpu99 \\(compared: both specs allow a node change\\)$`, 'm'),
    );

    // a night run in the allocation records its Slurm job, node and partition in the history
    const specFile = join(w.dir, 'slurm-night.yaml');
    writeFileSync(specFile, abSpec('slurm-night', 1, 2));
    const history = await openHistory({ url: null, file: join(w.dir, 'history.sqlite') });
    try {
      const night = await runNight(
        {
          redis: w.redis,
          prefix: w.prefix,
          history,
          log: pino({ level: 'silent' }),
          resultsRoot: join(w.dir, 'night-results'),
          send: async () => undefined,
        },
        { suite: 'slurm-night', file: join(w.dir, 'suite.yaml'), experiments: [specFile] },
        Date.now(),
      );
      assert.equal(night.state, 'done', JSON.stringify(night));
      const rows = await history.rows('slurm-night');
      assert.deepEqual(
        rows.map((r) => r.slurm),
        [{ jobs: [job], nodes: [node], partitions: ['debug'] }],
      );
      assert.match(
        renderHistory('slurm-night', rows),
        new RegExp(` on Slurm node ${node} \\(job ${job}, partition debug\\)`),
      );
    } finally {
      await history.close();
    }

    const down = await w.orch(['down', '--job', job, '--json']);
    assert.equal(down.code, 0, down.stderr);
    // drained: the workers stopped, so the batch script and the job ended with them (nothing left to scancel)
    assert.deepEqual(JSON.parse(down.stdout), { action: 'down', job, drained: true, cancelled: false });
    assert.doesNotMatch(execFileSync('squeue', ['-h', '-j', job, '-o', '%T'], { encoding: 'utf8' }), /RUNNING/);
    assert.ok(!existsSync(runDir), 'orch slurm down removed the run directory');
  });

  test('the pre-timeout signal reaches the batch shell alone, whose trap drains the workers: the job ends with them', async () => {
    const job = await w.up({ gpus: 1, time: '10', repMs: 20 });
    const [host] = await w.registered(job, 1);
    // what --signal=B:USR1@S sends S seconds before the end
    execFileSync('scancel', ['--batch', '--signal=USR1', job]);
    const registry = new CardRegistry(w.redis, { prefix: w.prefix });
    await waitFor('the worker drained', async () => !(await registry.hostInfo(host!.host)).alive, {
      timeoutMs: 30_000,
      intervalMs: 250,
    });
    await waitFor(
      'the job ended with its worker',
      () => !/RUNNING/.test(spawnSync('squeue', ['-h', '-j', job, '-o', '%T'], { encoding: 'utf8' }).stdout),
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    // by the trap's stop file, not by the signal killing the shell (and the step with it)
    const { dir } = findJob(join(w.dir, 'runs'), job);
    assert.ok(existsSync(join(dir, 'stop')), 'the trap wrote the stop file');
    // a shell killed by the signal takes the step down with it: the worker would have had Slurm's SIGTERM
    assert.doesNotMatch(readFileSync(join(dir, `slurm-${job}.out`), 'utf8'), /orch worker: SIGTERM|CANCELLED/);
  });

  test('two allocations share one experiment: each takes blocks, every rep measured once', async () => {
    const a = await w.up({ gpus: 1, time: '10', repMs: 300 });
    const b = await w.up({ gpus: 1, time: '10', repMs: 300 });
    await Promise.all([w.registered(a, 1), w.registered(b, 1)]);
    const id = await submitYaml(w.redis, w.prefix, w.dir, 'slurm-two', abSpec('slurm-two', 4, 2));
    assert.equal(await waitEnded(w.redis, w.prefix, id, 180_000), 'done');
    const row = await ledger(w, id, 'two allocations, one experiment');
    assert.equal(row.measured, row.planned);
    assert.equal(row.twice, 0);
    const committedOn = new Set(
      (await new ExperimentStore(w.redis, w.prefix).blocks(id)).flatMap((x) =>
        x.attempts.filter((t) => t.outcome === 'committed').map((t) => t.gang[0]!.host.replace(/.*-slurm/, '')),
      ),
    );
    assert.deepEqual([...committedOn].sort(), [a, b].sort(), 'blocks committed on both allocations');
    execFileSync('scancel', [a, b]);
  });

  test("a gang spread over two allocations: graphrt's CPU backend, rank 0's rendezvous on the allocation's address, one commit of both ranks", {
    skip: skipWithoutBinary,
  }, async () => {
    const jobEnv = { ORCH_ADVERTISE_ADDR: '127.0.0.1' };
    const [a, b] = [
      await w.up({ gpus: 1, time: '10', repMs: 0, graphrt: GRAPHRT, env: jobEnv }),
      await w.up({ gpus: 1, time: '10', repMs: 0, graphrt: GRAPHRT, env: jobEnv }),
    ];
    await Promise.all([w.registered(a, 1), w.registered(b, 1)]);
    const id = await submitYaml(w.redis, w.prefix, w.dir, 'slurm-spread', SPREAD_SPEC);
    assert.equal(await waitEnded(w.redis, w.prefix, id, 180_000), 'done');
    const row = await ledger(w, id, 'a gang spread over two allocations');
    assert.equal(row.measured, row.planned);
    assert.equal(row.twice, 0);
    const [block] = await new ExperimentStore(w.redis, w.prefix).blocks(id);
    const committed = block!.attempts.find((t) => t.outcome === 'committed')!;
    assert.deepEqual(
      committed.gang.map((p) => p.host.replace(/.*-slurm/, '')).sort(),
      [a, b].sort(),
      'one part on each allocation',
    );
    execFileSync('scancel', [a, b]);
  });

  test("one allocation of two nodes (.ci/slurm-up's partition pair: two slurmd on this host): one worker per node, a spread gang's ranks on both, rank 0's rendezvous on its node's Slurm NodeAddr", {
    skip: skipWithoutBinary,
  }, async () => {
    const node = execFileSync('hostname', ['-s'], { encoding: 'utf8' }).trim();
    // no ORCH_ADVERTISE_ADDR: the address comes from Slurm (127.0.0.1 in .ci/slurm-up, not this machine's first interface)
    const job = await w.up({ gpus: 1, nodes: 2, partition: 'pair', time: '10', repMs: 0, graphrt: GRAPHRT });
    const hosts = await w.registered(job, 2);
    assert.deepEqual(
      hosts.map((h) => h.host).sort(),
      [`${node}-2-slurm${job}`, `${node}-slurm${job}`],
      'one worker per node',
    );
    assert.deepEqual(hosts.map((h) => h.slurm?.node).sort(), [`${node}`, `${node}-2`]);
    const spec = SPREAD_SPEC.replace('name: slurm-spread', 'name: slurm-two-nodes');
    const id = await submitYaml(w.redis, w.prefix, w.dir, 'slurm-two-nodes', spec);
    // the rendezvous is published while the gang starts and deleted at its commit: watched meanwhile
    const staging = new GangStaging(w.redis, { prefix: w.prefix });
    const published = new Set<string>();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        for (const attempt of [0, 1, 2, 3]) {
          const address = await staging.rendezvousAddress({ experiment: id, block: 0, attempt });
          if (address !== null) published.add(address);
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    try {
      assert.equal(await waitEnded(w.redis, w.prefix, id, 180_000), 'done');
    } finally {
      watching = false;
      await watcher;
    }
    const row = await ledger(w, id, 'a gang spread over the two nodes of one allocation');
    assert.equal(row.measured, row.planned);
    assert.equal(row.twice, 0);
    const [block] = await new ExperimentStore(w.redis, w.prefix).blocks(id);
    const committed = block!.attempts.find((t) => t.outcome === 'committed')!;
    assert.deepEqual(
      committed.gang.map((p) => p.host).sort(),
      [`${node}-2-slurm${job}`, `${node}-slurm${job}`],
      'one rank on each node',
    );
    assert.ok(published.size > 0, 'the rendezvous was seen published');
    for (const address of published)
      assert.match(
        address,
        /^127\.0\.0\.1:\d+$/,
        `rank 0 listened on the node's NodeAddr (advertise-address.ts would give ${advertiseAddress({})})`,
      );
    execFileSync('scancel', [job]);
  });

  test("scancel mid-block: Slurm's SIGTERM reaches the worker and its ranks, which ignore it; the worker drains (the rep in flight finishes, the block is handed back whole, its reason names Slurm's SIGTERM) and the rest move to another allocation; nothing measured twice", async () => {
    const first = await w.up({ gpus: 1, time: '10', repMs: 400 });
    await w.registered(first, 1);
    const id = await submitYaml(w.redis, w.prefix, w.dir, 'slurm-scancel', abSpec('slurm-scancel', 3, 2));
    await waitFor(
      'a rep measured on the first allocation',
      async () => (await readEvents(w.redis, w.prefix, id)).some((e) => e.event.type === 'rep'),
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    execFileSync('scancel', [first]);
    const second = await w.up({ gpus: 1, time: '10', repMs: 20 });
    await w.registered(second, 1);
    assert.equal(await waitEnded(w.redis, w.prefix, id, 180_000), 'done');
    const row = await ledger(w, id, 'scancel of the allocation mid-block');
    assert.deepEqual(row.unaccounted, [], 'every planned rep measured or failed with a reason');
    assert.equal(row.twice, 0, 'nothing measured twice');
    assert.equal(row.measured + row.failed, row.planned);
    // the scancel hit a block mid-flight: its attempt on the first allocation did not commit, a later one did
    const blocks = await new ExperimentStore(w.redis, w.prefix).blocks(id);
    const hit = blocks.find((b) =>
      b.attempts.some((a) => a.gang[0]?.host.endsWith(`-slurm${first}`) && a.outcome !== 'committed'),
    );
    assert.ok(
      hit,
      `a block attempt on job ${first} was cut: ${JSON.stringify(blocks.map((b) => b.attempts.map((a) => [a.gang[0]?.host, a.outcome])))}`,
    );
    // drained, not killed: the ranks outlived the step's SIGTERM (a dead rank would be RANK_DIED, "killed by SIGTERM")
    const cut = hit.attempts.find((a) => a.gang[0]?.host.endsWith(`-slurm${first}`))!;
    assert.match(
      cut.reason ?? '',
      new RegExp(
        `stopped \\(Slurm's SIGTERM to job ${first}: scancel, preemption or its time limit\\) after \\d+ of 4 reps`,
      ),
      JSON.stringify(cut),
    );
    assert.ok(
      hit.attempts.some((a) => a.gang[0]?.host.endsWith(`-slurm${second}`) && a.outcome === 'committed'),
      'and committed on the second allocation',
    );
    execFileSync('scancel', [second]);
  });

  test('orch slurm down mid-block: the rep in flight finishes, the block is handed back whole and measured on the next allocation; nothing not run, nothing twice', async () => {
    const first = await w.up({ gpus: 1, time: '10', repMs: 1500 });
    await w.registered(first, 1);
    const id = await submitYaml(w.redis, w.prefix, w.dir, 'slurm-down', abSpec('slurm-down', 2, 6));
    await waitFor(
      'a rep measured on the first allocation',
      async () => (await readEvents(w.redis, w.prefix, id)).some((e) => e.event.type === 'rep'),
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    const down = await w.orch(['down', '--job', first, '--json']);
    assert.equal(down.code, 0, down.stderr);
    assert.equal(JSON.parse(down.stdout).drained, true);
    const second = await w.up({ gpus: 1, time: '10', repMs: 20 });
    await w.registered(second, 1);
    assert.equal(await waitEnded(w.redis, w.prefix, id, 180_000), 'done');
    const row = await ledger(w, id, 'orch slurm down mid-block (drain)');
    assert.deepEqual(row.unaccounted, []);
    assert.equal(row.measured, row.planned, `every planned rep measured (failed: ${row.reasons})`);
    assert.equal(row.twice, 0);
    const attempts = (await new ExperimentStore(w.redis, w.prefix).blocks(id)).flatMap((b) => b.attempts);
    const cut = attempts.find((a) => a.gang[0]?.host.endsWith(`-slurm${first}`) && a.outcome !== 'committed');
    assert.match(
      cut?.reason ?? '',
      /stopped \(stop file \S+ appeared \(orch slurm down, or the job's pre-timeout signal\)\) after \d+ of 12 reps/,
      JSON.stringify(attempts),
    );
    execFileSync('scancel', [second]);
  });

  test("an allocation that ends mid-experiment: no block is granted past its end, the waiting ones say why, the worker drains before Slurm's limit, and the blocks move to the next allocation", async () => {
    // two minutes, the last 10 s drained: the worker holds no lease after 110 s. (One minute, Slurm's
    // smallest limit, failed 2 of 9 runs on a loaded 2-core machine: the worker registered late and
    // drained before the scheduler had written the block's reason.)
    const t0 = Date.now();
    const short = await w.up({ gpus: 1, time: '2', repMs: 20, drainS: 10 });
    const [host] = await w.registered(short, 1);
    console.log(`# slurm: orch slurm up to a registered worker: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    // 2 arms × 60 reps × 401 steps at the planner's default 5 ms a step: each block is expected to take
    // over 240 s. (More steps a rep would make each rep line longer than the stream keeps whole,
    // worker/event-stream.ts MAX_EVENT_BYTES, and the ledger reads the stream's rep lines.)
    const spec = abSpec('slurm-timelimit', 3, 60).replace('warmup: 1, steps: 2', 'warmup: 1, steps: 400');
    const id = await submitYaml(w.redis, w.prefix, w.dir, 'slurm-timelimit', spec);
    const store = new ExperimentStore(w.redis, w.prefix);
    const seen = new Set<string>();
    const why = await waitFor(
      'a block waiting on the allocation end',
      async () => {
        const blocks = await store.blocks(id);
        for (const b of blocks) seen.add(`${b.phase}: ${b.why} (${b.attempts.length} attempts)`);
        return (
          blocks.find((b) => b.phase === 'waiting' && /longer than the allocations left/.test(b.why ?? ''))?.why ?? null
        );
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    ).catch((err: Error) => {
      throw new Error(
        `${err.message}; the blocks were: ${[...seen].join(' | ')}; scheduler: ${JSON.stringify(
          w.sched
            .log()
            .filter((l) => JSON.stringify(l).includes('slurm-timelimit'))
            .slice(-12),
        )}; the short job's output: ${readFileSync(join(findJob(join(w.dir, 'runs'), short).dir, `slurm-${short}.out`), 'utf8').slice(-3000)}`,
      );
    });
    assert.match(
      why,
      new RegExp(`expected to take \\d+ s, .*no lease past an allocation's end: ${host!.host} in \\d+ s`),
    );
    // the worker stops itself at the drain, before Slurm's time limit: its heartbeat goes and the job ends with it
    const registry = new CardRegistry(w.redis, { prefix: w.prefix });
    await waitFor('the short allocation drained', async () => !(await registry.hostInfo(host!.host)).alive, {
      timeoutMs: 150_000,
      intervalMs: 250,
    });
    await waitFor(
      'the short job ended',
      () => !/RUNNING/.test(spawnSync('squeue', ['-h', '-j', short, '-o', '%T'], { encoding: 'utf8' }).stdout),
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    assert.ok(
      (await store.blocks(id)).every((b) => b.attempts.length === 0),
      'no block was granted on the short allocation',
    );
    const long = await w.up({ gpus: 1, time: '10', repMs: 20 });
    await w.registered(long, 1);
    assert.equal(await waitEnded(w.redis, w.prefix, id, 240_000), 'done');
    const row = await ledger(w, id, 'the allocation reaches its time limit mid-experiment');
    assert.deepEqual(row.unaccounted, [], 'every planned rep measured or failed with a reason');
    assert.equal(row.measured, row.planned, 'the blocks moved to the second allocation');
    assert.equal(row.twice, 0, 'nothing measured twice');
  });
});

if (missing) test(missing, { skip: missing }, () => {});
