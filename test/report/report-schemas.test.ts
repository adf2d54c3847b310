/**
 * The JSON Schemas of report.json and summary.json (docs/schemas/), checked against real files:
 * a results directory written by a real run (redis-server, `orch serve`, `orch worker` with
 * fixture ranks, `orch submit`), and the reports of the simulated leave-one-out and sequential
 * experiments (every optional section). Every number in either schema names its unit. The real
 * run's provenance holds the machine record its worker reported (OS, kernel, CPU, Node). samples.csv
 * beside report.md holds every measured step of every committed rep, as Redis held them.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, release, tmpdir, type } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { renderJson } from '../../orchestrator/report/render-json.ts';
import { SAMPLES_HEADER } from '../../orchestrator/report/render-samples-csv.ts';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import { ResultStore } from '../../store/result-store.ts';
import { type Cluster, runOrch, startCluster } from '../orchestrator/orch-cluster.ts';
import { abWithAa, looExperiment } from '../stats/fixtures.ts';

const schema = (name: string) =>
  JSON.parse(readFileSync(`docs/schemas/${name}.schema.json`, 'utf8')) as Record<string, unknown>;

function validator(name: string) {
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  ajv.addKeyword({ keyword: 'unit', schemaType: 'string' });
  // summary.schema.json refers to report.schema.json's definitions (by its $id), not a copy of them
  if (name !== 'report') ajv.addSchema(schema('report'));
  return ajv.compile(schema(name));
}

function check(name: string, doc: unknown): void {
  const v = validator(name);
  assert.ok(v(doc), `${name}.schema.json: ${JSON.stringify(v.errors?.slice(0, 5), null, 1)}`);
}

/** Every schema node typed number or integer, with its path. */
function numberNodes(node: unknown, path = '#'): { path: string; unit: unknown }[] {
  if (node === null || typeof node !== 'object') return [];
  const o = node as Record<string, unknown>;
  const types = ([] as unknown[]).concat(o.type ?? []);
  const own = types.includes('number') || types.includes('integer') ? [{ path, unit: o.unit }] : [];
  return [...own, ...Object.entries(o).flatMap(([k, v]) => numberNodes(v, `${path}/${k}`))];
}

test('every number in the schemas names its unit', () => {
  for (const name of ['report', 'summary']) {
    const nodes = numberNodes(schema(name));
    // summary's own numbers (its analysis is report.schema.json's Analysis, checked there)
    assert.ok(nodes.length > (name === 'report' ? 50 : 10), `${name}: ${nodes.length} numbers`);
    const bare = nodes.filter((x) => typeof x.unit !== 'string' || x.unit === '');
    assert.deepEqual(
      bare.map((x) => x.path),
      [],
      `${name}: numbers without a unit`,
    );
  }
});

test('report.json of the simulated experiments (leave-one-out, A/B with A/A, sequential) validates; a broken one does not', () => {
  const loo = JSON.parse(renderJson(analyzeExperiment(looExperiment(5))));
  check('report', loo);
  check('report', JSON.parse(renderJson(analyzeExperiment(abWithAa(6)))));
  // stopping: sequential, two looks, its blocks ended in order
  const ab = abWithAa(7);
  const seq = analyzeExperiment({
    ...ab,
    plan: { ...ab.plan, sequential: { looks: 2 } },
    ended: ab.plan.blocks.map((b, i) => ({ block: b.index, ended_at: i })),
  });
  assert.ok(seq.sequential, 'the sequential section is there');
  check('report', JSON.parse(renderJson(seq)));
  const v = validator('report');
  assert.equal(v({ ...loo, verdict: 'better' }), false, 'a verdict the schema does not know');
  assert.equal(v({ ...loo, surprise: 1 }), false, 'a field the schema does not know');
  assert.equal(v({ ...loo, arms: [{ ...loo.arms[0], mean: '41.2 ms' }] }), false, 'a number written as text');
});

let cluster: Cluster | null = null;
const results = mkdtempSync(join(tmpdir(), 'orch-schemas-'));
after(async () => {
  await cluster?.stop();
  rmSync(results, { recursive: true, force: true });
});

test('a real run: report.json and summary.json validate; samples.csv holds every committed step', async () => {
  cluster = await startCluster();
  const c = cluster;
  c.startServe();
  await c.startWorker({ cpuCards: 1, repMs: 20 });
  const r = await runOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml', '--results', results], c.env, 120_000);
  const dir = /^results: (.+)$/m.exec(r.stdout)?.[1];
  assert.ok(dir, `${r.code}\n${r.stdout}\n${r.stderr}`);
  const report = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8'));
  const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'));
  check('report', report);
  check('summary', summary);
  // the machine record, as the worker (on this machine) reported it at each block's start
  const [m] = report.provenance.machines;
  assert.deepEqual(
    [m.host, m.os, m.kernel, m.node, m.cpu_model, m.gpus],
    ['h1', type(), release(), process.version, cpus()[0]!.model.trim(), []],
  );
  assert.match(
    readFileSync(join(dir, 'report.md'), 'utf8'),
    new RegExp(`^- machine h1: ${type()} .*; node ${process.version}; compiler `, 'm'),
  );

  const reps = Object.values(await new ResultStore(c.redis, { prefix: c.prefix }).results(summary.experiment));
  const lines = readFileSync(join(dir, 'samples.csv'), 'utf8').trim().split('\n');
  assert.equal(lines[0], SAMPLES_HEADER.join(','));
  const rows = lines.slice(1).map((l) => l.split(','));
  assert.equal(
    rows.length,
    reps.reduce((t, x) => t + x.step_ms.length, 0),
    'one row per measured step',
  );
  const col = (name: string) => SAMPLES_HEADER.indexOf(name as (typeof SAMPLES_HEADER)[number]);
  for (const rep of reps) {
    const mine = rows.filter(
      (x) => Number(x[col('block')]) === rep.block && x[col('arm')] === rep.arm && Number(x[col('rep')]) === rep.rep,
    );
    assert.deepEqual(
      mine.map((x) => Number(x[col('step_ms')])),
      rep.step_ms,
      `${rep.block}/${rep.arm}/${rep.rep}`,
    );
  }
});
