/**
 * The numbers a user sees come from the records, not the event stream, which may cut or lose what
 * it carries (real redis-server, `orch serve`, `orch worker` with fixture ranks, `orch submit`,
 * `--watch`): an A/B whose 800-step rep lines the stream cuts (16 KiB, worker/event-stream.ts).
 * The watch (`orch watch`, `orch submit --watch`) counts a running block's reps as they are measured (store/rep-progress.ts), though
 * no whole rep line reaches the stream; and once the experiment ended and its stream is deleted
 * outright, its results still name the host, the card, its device, the graphrt version it ran and
 * the machine record (the commit records' `ranks` and `hosts`, jobs/commit-record.ts), and its trace still draws the committed
 * attempt with its phases and reps.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { writeResults } from '../../orchestrator/results/write-results.ts';
import { ExperimentStore } from '../../store/experiment-store.ts';
import { orchKeys } from '../../store/keys.ts';
import { type Cluster, runOrch, spawnOrch, startCluster } from '../orchestrator/orch-cluster.ts';

let cluster: Cluster | null = null;
const scratch = mkdtempSync(join(tmpdir(), 'orch-stream-cut-'));
after(async () => {
  await cluster?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

test('a stream that cut every rep line and was then deleted: watch counted the running reps, the results name host, card and device', async () => {
  cluster = await startCluster();
  const c = cluster;
  c.startServe();
  // slow enough a rep that the progress drawn between two reps shows the block running
  await c.startWorker({ cpuCards: 1, repMs: 400 });
  const results = join(scratch, 'submitted');
  const submit = spawnOrch(
    ['submit', 'test/fixtures/specs/ab-800-steps.yaml', '--watch', '--fail-on', 'none', '--results', results],
    c.env,
  );
  assert.equal((await submit.exited).code, 0, submit.out());
  const id = readdirSync(results)[0] as string;
  assert.equal(await new ExperimentStore(c.redis, c.prefix).state(id), 'done');

  // the premise: the stream's copy of every rep line was cut (a text body, never a rep line)
  const entries = (await c.redis.xrange(orchKeys(c.prefix).events(id), '-', '+')).map(([, f]) => f.at(-1) ?? '');
  assert.equal(entries.filter((e) => e.startsWith('{"v":1,"type":"rep"') && e.endsWith('}')).length, 0);
  assert.equal(entries.filter((e) => e.includes('"type":"rep"') && e.includes('[orch: event cut:')).length, 6);

  // the watch drew the block running with some of its 6 reps done, not 0 until its commit
  const running = submit
    .out()
    .split('\n')
    .map((l) => / {2}block 0 {2}\S* +(\d)\/6 {2}running/.exec(l)?.[1])
    .filter((n) => n !== undefined)
    .map(Number);
  assert.ok(
    running.some((n) => n > 0 && n < 6),
    `the running counts drawn ${JSON.stringify(running)}:\n${submit.out()}`,
  );

  // the stream gone altogether: the provenance and the devices come from the commit records
  await c.redis.del(orchKeys(c.prefix).events(id));
  const written = await writeResults(c.redis, c.prefix, id, join(scratch, 'results'));
  const summary = JSON.parse(readFileSync(join(written.dir, 'summary.json'), 'utf8'));
  const p = summary.analysis.provenance;
  assert.equal(summary.events.total, 0, 'no event was read');
  assert.deepEqual(p.hosts, ['h1']);
  assert.deepEqual(p.graphrt, ['fixture']);
  assert.deepEqual(
    p.cards.map((k: { host: string; card: string; name: string; backend: string }) => [
      k.host,
      k.card,
      k.name,
      k.backend,
    ]),
    [['h1', 'cpu:0@h1', 'fixture cpu_0@h1', 'cpu']],
  );
  assert.deepEqual(summary.analysis.backend.devices, ['fixture cpu_0@h1']);
  // the machine its worker read as the block started
  assert.deepEqual(
    p.machines.map((m: { host: string; os: string | null }) => [m.host, m.os]),
    [['h1', 'Linux']],
  );

  // and orch trace draws the committed attempt, its phases and its reps from the records
  const t = await runOrch(['trace', id], c.env);
  assert.equal(t.code, 0, t.stderr);
  const slices = (
    JSON.parse(t.stdout) as { traceEvents: { ph: string; name: string; args?: { gates?: unknown } }[] }
  ).traceEvents.filter((e) => e.ph === 'X');
  const names = slices.map((e) => e.name);
  for (const name of ['block 0 attempt 1', 'worker: block 0 attempt 1', 'ranks starting, block 0'])
    assert.equal(names.filter((n) => n === name).length, 1, `${name} in ${JSON.stringify(names)}`);
  // the graph arm's identity gate (an eager arm has none), with its verdict
  assert.deepEqual(slices.find((e) => e.name === 'identity gates, block 0')?.args?.gates, [
    { arm: 'graph_pdl', pass: true },
  ]);
  assert.equal(names.filter((n) => n.startsWith('rep ')).length, 6);
});
