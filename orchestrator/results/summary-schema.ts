/**
 * summary.json (orchestrator/results/write-results.ts) as zod: the one definition of an
 * experiment's results record, made of the schemas its parts are read with at rest (the plan, the
 * block states, the commit records, the gates: jobs/ and store/) and the Analysis of report.json
 * (orchestrator/stats/analysis-schema.ts). The JSON Schema shipped in
 * docs/schemas/summary.schema.json is generated from it (`npm run gen:schemas`,
 * scripts/gen-schemas.ts; test/report/summary-schema.test.ts fails when it is stale) and refers to
 * report.schema.json's Analysis rather than copying it; every summary.json written is parsed with it
 * (summary-json.ts). Every number carries its unit in `.meta({ unit })`, as in report.json.
 */
import { z } from 'zod';
import { CommitRecordSchema } from '../../jobs/commit-record.ts';
import { GateResultSchema } from '../../jobs/gate-result.ts';
import { PlanSchema } from '../../jobs/plan-schema.ts';
import { BlockStateSchema, EXPERIMENT_STATES } from '../../store/experiment-store.ts';
import type { Provenance } from '../report/provenance.ts';
import { AnalysisSchema, readerLayout } from '../stats/analysis-schema.ts';
import type { Analysis } from '../stats/types.ts';
import { AccountingSchema } from './rep-fates.ts';

const count = z.int().min(0).meta({ unit: 'count' });

/** Everything of summary.json but its analysis. */
const summaryRecord = {
  experiment: z.string(),
  name: z.string(),
  hash: z.string(),
  state: z.enum(EXPERIMENT_STATES),
  reason: z.string().nullable(),
  /** ISO 8601 */
  created: z.string(),
  ended: z.string().nullable(),
  file: z.string().nullable(),
  plan: PlanSchema.meta({ description: 'the compiled plan (jobs/plan.ts)' }),
  blocks: z.array(BlockStateSchema),
  commits: z
    .record(z.string(), CommitRecordSchema)
    .meta({ description: 'the commit record of each committed block by "<block>" (jobs/commit-record.ts)' }),
  gates: z.record(z.string(), GateResultSchema).meta({
    description: 'the committed identity gates by "<block>/<arm>" (jobs/gate-result.ts), each rank\'s check in detail',
  }),
  accounting: AccountingSchema,
  events: z.strictObject({ total: count, committed: count }),
};

export const SummaryJsonSchema = z.strictObject({ ...summaryRecord, analysis: AnalysisSchema });
/** The Analysis as its writer types it (types.ts: read-only lists the compiler holds equal to the schema), with its provenance. */
export type SummaryJson = Omit<z.infer<typeof SummaryJsonSchema>, 'analysis'> & {
  analysis: Analysis & { provenance?: Provenance };
};

/** Where the generated JSON Schema lives, relative to the repository root. */
export const SUMMARY_SCHEMA_PATH = 'docs/schemas/summary.schema.json';

/**
 * A value of two types (a toggle's `true` or `"value"`) as an anyOf, in place: zod writes a type
 * list, which a validator in strict mode refuses unless it is one type and null.
 */
function anyOfForTypeLists(node: unknown): void {
  if (node === null || typeof node !== 'object') return;
  const o = node as Record<string, unknown>;
  if (Array.isArray(o.type) && o.type.filter((t) => t !== 'null').length > 1) {
    o.anyOf = o.type.map((type: unknown) => ({ type }));
    delete o.type;
  }
  for (const v of Object.values(o)) anyOfForTypeLists(v);
}

/** The JSON Schema of summary.json, as docs/schemas/summary.schema.json ships it. */
export function summaryJsonSchema(): Record<string, unknown> {
  // the analysis by reference to report.schema.json: one definition for both files
  const generated = z.toJSONSchema(z.strictObject({ ...summaryRecord, analysis: z.unknown() }), {
    target: 'draft-2020-12',
    unrepresentable: 'throw',
    override: readerLayout,
  }) as { properties: Record<string, unknown>; required: string[] };
  anyOfForTypeLists(generated);
  generated.properties.analysis = {
    $ref: 'report.schema.json#/$defs/Analysis',
    description: 'the Analysis, as report.json defines it (one definition for both files)',
  };
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://orch.invalid/schemas/summary.schema.json',
    title: 'orch summary.json',
    description:
      'An experiment\'s results record (orchestrator/results/write-results.ts), generated from orchestrator/results/summary-schema.ts by `npm run gen:schemas`: state, plan, blocks and attempts, the commit records and committed gates, every planned rep accounted for, and the analysis with its provenance. Every number carries "unit", as in report.schema.json.',
    ...generated,
    required: [...generated.required, 'analysis'].filter((f, i, all) => all.indexOf(f) === i),
  };
}
