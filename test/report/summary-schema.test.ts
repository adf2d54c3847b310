/**
 * summary.json's zod definition (orchestrator/results/summary-schema.ts) and the JSON Schema
 * generated from it (docs/schemas/summary.schema.json): the shipped file is what
 * `npm run gen:schemas` writes now; a summary as write-results.ts makes it (a real plan, block
 * states, a commit record with its ranks, the accounting, a nightly analysis) is written by
 * renderSummaryJson and validates with the shipped files under ajv; one that breaks the definition
 * is refused where it is written, naming the field. test/report/report-schemas.test.ts validates a
 * real run's summary.json as well.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { planExperiment } from '../../jobs/plan.ts';
import { accountReps } from '../../orchestrator/results/rep-fates.ts';
import { renderSummaryJson } from '../../orchestrator/results/summary-json.ts';
import { SUMMARY_SCHEMA_PATH, type SummaryJson, summaryJsonSchema } from '../../orchestrator/results/summary-schema.ts';
import { parseConfigText } from '../../orchestrator/spec/load-spec.ts';
import { REPORT_SCHEMA_PATH } from '../../orchestrator/stats/analysis-schema.ts';
import { initialBlockState } from '../../store/experiment-store.ts';
import { nightlyReport } from './report-json-fixtures.ts';

const json = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;

function shippedValidator() {
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  ajv.addKeyword({ keyword: 'unit', schemaType: 'string' });
  ajv.addSchema(json(REPORT_SCHEMA_PATH));
  return ajv.compile(json(SUMMARY_SCHEMA_PATH));
}

function summary(): SummaryJson {
  const loaded = parseConfigText('configs/ab.yaml', readFileSync('configs/ab.yaml', 'utf8'));
  if (loaded.kind !== 'experiment') throw new Error('configs/ab.yaml is an experiment');
  const plan = planExperiment(loaded.spec, loaded.hash);
  const blocks = plan.blocks.map((b) => ({ ...initialBlockState(b.index), phase: 'done' as const, attempt: 1 }));
  return {
    experiment: 'chain-graph-ab-20261204-000000-1',
    name: plan.name,
    hash: loaded.hash,
    state: 'done',
    reason: null,
    created: '2026-12-04T00:00:00.000Z',
    ended: '2026-12-04T00:01:00.000Z',
    file: 'configs/ab.yaml',
    plan,
    blocks,
    commits: {
      '0': {
        attempt: 1,
        epoch: 7,
        host: 'h1',
        committed: 1_796_342_460_000,
        started: 1_796_342_400_000,
        ready: 1_796_342_401_000,
        gated: 1_796_342_402_000,
        ranks: [
          {
            rank: 0,
            host: 'h1',
            card: 'cpu:0@h1',
            backend: 'cpu',
            device: 'cpu',
            sm: null,
            driver: 'none',
            graphrt: ['0.4.0'],
            program: null,
          },
        ],
      },
    },
    gates: {},
    accounting: accountReps({ plan }, {}, {}),
    events: { total: 12, committed: 12 },
    analysis: nightlyReport(),
  };
}

test('docs/schemas/summary.schema.json holds what npm run gen:schemas writes from the zod definition', () => {
  // the content, not the layout: that is the formatter's (biome.jsonc), which the script runs
  assert.deepEqual(json(SUMMARY_SCHEMA_PATH), summaryJsonSchema(), 'stale: run npm run gen:schemas');
});

test('a summary as the results writer makes it: written through its schema, valid under the shipped files', () => {
  const doc = JSON.parse(renderSummaryJson(summary())) as Record<string, unknown>;
  const v = shippedValidator();
  assert.ok(v(doc), `${SUMMARY_SCHEMA_PATH}: ${JSON.stringify(v.errors?.slice(0, 5), null, 1)}`);
  assert.equal(v({ ...doc, surprise: 1 }), false, 'a field the schema does not know');
  assert.equal(v({ ...doc, events: { total: '12', committed: 12 } }), false, 'a count written as text');
});

test('a summary that breaks its definition is refused as it is written, naming the field', () => {
  const bad = summary();
  bad.commits['0'] = { ...bad.commits['0']!, attempt: 0 };
  assert.throws(
    () => renderSummaryJson(bad),
    /summary\.json of chain-graph-ab-20261204-000000-1 does not match its schema .*commits\.0\.attempt/,
  );
});
