/**
 * report.json's zod definition (orchestrator/stats/analysis-schema.ts) and the JSON Schema
 * generated from it (docs/schemas/report.schema.json): the shipped file is what
 * `npm run gen:schemas` writes now, and the report of every fixture (report-json-fixtures.ts)
 * parses with the zod schema and validates with the shipped file under ajv, each with the section
 * that fixture is there for.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { renderJson } from '../../orchestrator/report/render-json.ts';
import { REPORT_SCHEMA_PATH, ReportJsonSchema, reportJsonSchema } from '../../orchestrator/stats/analysis-schema.ts';
import type { Analysis } from '../../orchestrator/stats/types.ts';
import { captureProbe, failedBlock, nightlyReport, sequentialStop, throttledRep } from './report-json-fixtures.ts';

function shipped() {
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  ajv.addKeyword({ keyword: 'unit', schemaType: 'string' });
  return ajv.compile(JSON.parse(readFileSync(REPORT_SCHEMA_PATH, 'utf8')) as object);
}

/** The report.json text of an analysis, as a reader parses it, checked by both definitions. */
function validReport(a: Analysis): Record<string, unknown> {
  const doc = JSON.parse(renderJson(a)) as Record<string, unknown>;
  const parsed = ReportJsonSchema.safeParse(doc);
  assert.ok(parsed.success, `zod: ${parsed.error?.message}`);
  const v = shipped();
  assert.ok(v(doc), `${REPORT_SCHEMA_PATH}: ${JSON.stringify(v.errors?.slice(0, 5), null, 1)}`);
  return doc;
}

test('docs/schemas/report.schema.json holds what npm run gen:schemas writes from the zod definition', () => {
  // the content, not the layout: that is the formatter's (biome.jsonc), which the script runs
  assert.deepEqual(
    JSON.parse(readFileSync(REPORT_SCHEMA_PATH, 'utf8')),
    reportJsonSchema(),
    'stale: run npm run gen:schemas',
  );
});

test('a throttled rep and a re-run rep: report.json says why and validates', () => {
  const a = throttledRep();
  validReport(a);
  assert.ok(
    a.values.some((v) => (v.throttled ?? []).length > 0),
    'a value carries its throttle reasons',
  );
  assert.ok(
    a.values.some((v) => v.reruns === 1),
    'a value carries its re-runs',
  );
});

test('a failed block: its reps are missing and named; report.json validates', () => {
  const a = failedBlock();
  validReport(a);
  assert.ok(
    a.arms.every((arm) => arm.missing > 0),
    JSON.stringify(a.arms.map((x) => x.missing)),
  );
  assert.ok(
    a.issues.some((i) => /CUDA_ERROR_ILLEGAL_ADDRESS/.test(i)),
    a.issues.join('\n'),
  );
  assert.deepEqual(
    a.failed_rank_output?.[0]?.stderr,
    ['CUDA_ERROR_ILLEGAL_ADDRESS at decode.cu:88'],
    'what the rank printed last',
  );
});

test('a capture probe with a refusal that was accepted: the probe section validates', () => {
  const a = captureProbe();
  validReport(a);
  assert.equal(a.verdict, 'fail');
  assert.ok(
    a.probe?.capture_errors.some((e) => e.class === 'accepted-not-refused'),
    JSON.stringify(a.probe),
  );
});

test('a sequential experiment stopped at its first look: the sequential section validates', () => {
  const a = sequentialStop();
  validReport(a);
  assert.equal(a.sequential?.decided_at, 1, JSON.stringify(a.sequential));
  assert.equal(a.verdict, 'faster');
});

test("a nightly run's report: the provenance with Slurm hosts and machines validates", () => {
  const doc = validReport(nightlyReport());
  assert.equal((doc.provenance as { slurm: unknown[] }).slurm.length, 1);
});

test('the zod definition refuses what the shipped schema refuses', () => {
  const doc = JSON.parse(renderJson(throttledRep())) as Record<string, unknown>;
  const values = doc.values as Record<string, unknown>[];
  const v = shipped();
  for (const [bad, why] of [
    [{ ...doc, verdict: 'better' }, 'a verdict neither knows'],
    [{ ...doc, surprise: 1 }, 'a field neither knows'],
    [{ ...doc, version: 2 }, 'another format version'],
    [{ ...doc, values: [{ ...values[0], throttled: 'hw_slowdown' }] }, 'throttle reasons as text'],
  ] as const) {
    assert.equal(ReportJsonSchema.safeParse(bad).success, false, `zod: ${why}`);
    assert.equal(v(bad), false, `ajv: ${why}`);
  }
});

test('the writer refuses a report.json its schema refuses: a NaN where no null is allowed', () => {
  const a = throttledRep();
  const bad = { ...a, values: [{ ...a.values[0]!, value: Number.NaN }, ...a.values.slice(1)] };
  assert.throws(
    () => renderJson(bad),
    /^Error: report\.json of \S+ does not match its schema \(docs\/schemas\/report\.schema\.json\): values\.0\.value: /,
  );
});
