/**
 * report.json (orchestrator/report/render-json.ts) as zod: the one definition of the machine report.
 * The JSON Schema shipped in docs/schemas/report.schema.json is generated from it
 * (`npm run gen:schemas`, scripts/gen-schemas.ts; test/report/analysis-schema.test.ts fails when it is
 * stale), and every report.json written is parsed with it (render-json.ts), so the schema a
 * reader validates against is the shape the writer produces. Its provenance is provenance-schema.ts. The hand-written TypeScript types of
 * the Analysis (types.ts) are checked against it at compile time (orchestrator/report/analysis-schema-check.ts).
 *
 * Every number carries its unit in `.meta({ unit })`, which the JSON Schema keeps as `"unit"`:
 * metric = the unit of metric.name (ms per step by default); ratio = a fraction of the reference
 * (0.012 = +1.2 %); ratio per position = a relative change per step of run position; log ratio = a
 * natural-log ratio; probability; count; statistic = a dimensionless test statistic; z = a
 * standard-normal boundary; index, position = 0-based places; ms; MHz; W; bytes.
 * A schema with an `id` becomes one of the JSON Schema's `$defs` (summary.schema.json refers to
 * `#/$defs/Analysis`).
 */
import { z } from 'zod';
import { GRAPHRT_TOGGLES } from '../../jobs/graphrt-toggles.ts';
import { ProvenanceSchema } from './provenance-schema.ts';

export const VerdictSchema = z
  .enum(['faster', 'slower', 'equivalent', 'inconclusive', 'invalid', 'not_testable'])
  .meta({ id: 'Verdict' });
export type Verdict = z.infer<typeof VerdictSchema>;

export const MetricSchema = z
  .strictObject({
    name: z.string(),
    better: z.enum(['lower', 'higher']),
    statistic: z.enum(['median', 'mean']),
  })
  .meta({ id: 'Metric' });
export type Metric = z.infer<typeof MetricSchema>;

export const PairedLogRatioSchema = z
  .strictObject({
    n: z.int().meta({ unit: 'count' }),
    df: z.number().meta({ unit: 'count' }).nullable(),
    mean: z.number().meta({ unit: 'log ratio' }).nullable(),
    sd: z.number().meta({ unit: 'log ratio' }).nullable(),
    se: z.number().meta({ unit: 'log ratio' }).nullable(),
    t: z.number().meta({ unit: 'statistic' }).nullable(),
    p: z.number().meta({ unit: 'probability' }).nullable(),
    ci: z.tuple([z.number().meta({ unit: 'log ratio' }), z.number().meta({ unit: 'log ratio' })]).nullable(),
  })
  .meta({
    id: 'PairedLogRatio',
    description: 'paired t on ln(arm / reference): mean, sd, se and ci are natural-log ratios',
  });
export type PairedLogRatio = z.infer<typeof PairedLogRatioSchema>;

export const PairedDifferenceSchema = z
  .strictObject({
    n: z.int().meta({ unit: 'count' }),
    df: z.number().meta({ unit: 'count' }).nullable(),
    mean: z.number().meta({ unit: 'metric' }).nullable(),
    sd: z.number().meta({ unit: 'metric' }).nullable(),
    se: z.number().meta({ unit: 'metric' }).nullable(),
    t: z.number().meta({ unit: 'statistic' }).nullable(),
    p: z.number().meta({ unit: 'probability' }).nullable(),
    ci: z.tuple([z.number().meta({ unit: 'metric' }), z.number().meta({ unit: 'metric' })]).nullable(),
  })
  .meta({ id: 'PairedDifference', description: "paired difference arm − reference, in the metric's unit" });
export type PairedDifference = z.infer<typeof PairedDifferenceSchema>;

export const ComparisonSchema = z
  .strictObject({
    arm: z.string(),
    reference: z.string(),
    pairs: z.int().meta({ unit: 'count' }),
    unpaired: z.array(z.string()),
    log_ratio: PairedLogRatioSchema,
    relative: z.strictObject({
      estimate: z.number().meta({ unit: 'ratio', description: 'exp(mean log ratio) − 1' }).nullable(),
      ci: z.tuple([z.number().meta({ unit: 'ratio' }), z.number().meta({ unit: 'ratio' })]).nullable(),
      se: z.number().meta({ unit: 'ratio' }).nullable(),
    }),
    absolute: PairedDifferenceSchema,
    wilcoxon: z.strictObject({
      w_plus: z.number().meta({ unit: 'statistic' }).nullable(),
      p: z.number().meta({ unit: 'probability' }).nullable(),
      method: z.union([z.literal('exact'), z.literal('normal'), z.null()]),
    }),
    verdict: VerdictSchema,
    reasons: z.array(z.string()),
    bound: z.number().meta({ unit: 'ratio' }).nullable(),
    mde: z.number().meta({ unit: 'ratio' }).nullable(),
    statement: z.string(),
    sequential_look: z
      .int()
      .min(0)
      .meta({
        unit: 'index',
        description:
          "stopping: sequential, the primary comparison only: the look (1-based; 0 before any) its numbers are from, the deciding look's or else the last; its CIs are that look's repeated CI and it has no p",
      })
      .optional(),
  })
  .meta({ id: 'Comparison' });
export type Comparison = z.infer<typeof ComparisonSchema>;

export const ArmSchema = z
  .strictObject({
    arm: z.string(),
    aa_of: z.string().nullable(),
    unsupported: z.array(
      z.strictObject({
        toggle: z.enum(GRAPHRT_TOGGLES),
        backends: z.array(z.string()),
        note: z.string(),
      }),
    ),
    planned: z.int().meta({ unit: 'count' }),
    missing: z.int().meta({ unit: 'count' }),
    n: z.int().meta({ unit: 'count' }),
    mean: z.number().meta({ unit: 'metric' }).nullable(),
    median: z.number().meta({ unit: 'metric' }).nullable(),
    sd: z.number().meta({ unit: 'metric' }).nullable(),
    sem: z.number().meta({ unit: 'metric' }).nullable(),
    ci: z.tuple([z.number().meta({ unit: 'metric' }), z.number().meta({ unit: 'metric' })]).nullable(),
    min: z.number().meta({ unit: 'metric' }).nullable(),
    max: z.number().meta({ unit: 'metric' }).nullable(),
    cv: z.number().meta({ unit: 'ratio', description: 'sd / mean' }).nullable(),
  })
  .meta({ id: 'Arm' });
export type Arm = z.infer<typeof ArmSchema>;

export const GateSchema = z
  .strictObject({
    name: z.enum(['input', 'identity', 'aa', 'base_reference', 'probe']),
    pass: z.boolean().nullable(),
    message: z.string(),
  })
  .meta({ id: 'Gate' });
export type Gate = z.infer<typeof GateSchema>;

export const FTestSchema = z
  .strictObject({
    F: z.number().meta({ unit: 'statistic' }).nullable(),
    df1: z.number().meta({ unit: 'count' }),
    df2: z.number().meta({ unit: 'count' }),
    p: z.number().meta({ unit: 'probability' }).nullable(),
  })
  .meta({ id: 'FTest' });
export type FTest = z.infer<typeof FTestSchema>;

export const OrderSchema = z
  .strictObject({
    by_position: z.array(
      z.strictObject({
        position: z.int().meta({ unit: 'position' }),
        effect: z.number().meta({ unit: 'ratio' }).nullable(),
        n: z.int().meta({ unit: 'count' }),
      }),
    ),
    by_arm_position: z.array(
      z.strictObject({
        arm: z.string(),
        position: z.int().meta({ unit: 'position' }),
        effect: z.number().meta({ unit: 'ratio' }).nullable(),
        n: z.int().meta({ unit: 'count' }),
      }),
    ),
    position_test: FTestSchema,
    interaction_test: FTestSchema,
    flagged: z.boolean(),
    message: z.string(),
  })
  .meta({ id: 'Order' });
export type Order = z.infer<typeof OrderSchema>;

export const DriftSchema = z
  .strictObject({
    arm: z.string(),
    slope: z.number().meta({ unit: 'ratio per position' }).nullable(),
    se: z.number().meta({ unit: 'ratio per position' }).nullable(),
    t: z.number().meta({ unit: 'statistic' }).nullable(),
    p: z.number().meta({ unit: 'probability' }).nullable(),
    df: z.number().meta({ unit: 'count' }).nullable(),
    flagged: z.boolean(),
  })
  .meta({ id: 'Drift' });
export type Drift = z.infer<typeof DriftSchema>;

export const LooRowSchema = z
  .strictObject({
    toggle: z.string(),
    arm: z.string(),
    unsupported: z.string().nullable(),
    worth: z.number().meta({ unit: 'metric' }).nullable(),
    worth_se: z.number().meta({ unit: 'metric' }).nullable(),
    worth_rel: z.number().meta({ unit: 'ratio' }).nullable(),
    worth_rel_se: z.number().meta({ unit: 'ratio' }).nullable(),
    t: z.number().meta({ unit: 'statistic' }).nullable(),
    p: z.number().meta({ unit: 'probability' }).nullable(),
    df: z.number().meta({ unit: 'count' }).nullable(),
    share: z.number().meta({ unit: 'ratio', description: 'worth / (base − all_on)' }).nullable(),
  })
  .meta({ id: 'LooRow' });
export type LooRow = z.infer<typeof LooRowSchema>;

export const LooSchema = z
  .strictObject({
    rows: z.array(LooRowSchema),
    total: z.number().meta({ unit: 'metric' }).nullable(),
    total_se: z.number().meta({ unit: 'metric' }).nullable(),
    total_rel: z.number().meta({ unit: 'ratio' }).nullable(),
    interaction: PairedDifferenceSchema,
    interaction_flagged: z.boolean(),
    message: z.string(),
    share_withheld: z.string().nullable(),
  })
  .meta({ id: 'Loo' });
export type Loo = z.infer<typeof LooSchema>;

export const RepValueSchema = z
  .strictObject({
    block: z.int().meta({ unit: 'index' }),
    arm: z.string(),
    rep: z.int().meta({ unit: 'index' }),
    position: z.int().meta({ unit: 'position' }),
    value: z.number().meta({ unit: 'metric' }),
    /** jobs/clock-hygiene.ts: used although its card was throttled (hygiene flag or warn), and why */
    throttled: z.array(z.string()).min(1).optional(),
    /** hygiene discard: how many earlier measurements of it were thrown away for a re-run */
    reruns: z.int().min(1).meta({ unit: 'count' }).optional(),
  })
  .meta({ id: 'RepValue' });
export type RepValue = z.infer<typeof RepValueSchema>;

export const ProbeSchema = z
  .strictObject({
    planned: z.int().meta({ unit: 'count' }),
    rows: z.array(
      z.strictObject({
        block: z.int().meta({ unit: 'index' }),
        rep: z.int().meta({ unit: 'index' }),
        rank: z.int().meta({ unit: 'index' }),
        card: z.string(),
        device: z.string(),
        pass: z.boolean(),
        failed: z.array(z.string()),
        launches_counted: z.number().meta({ unit: 'count' }).nullable(),
        launches_expected: z.number().meta({ unit: 'count' }).nullable(),
        launches_during_replays: z.number().meta({ unit: 'count' }).nullable(),
        graph_nodes: z.number().meta({ unit: 'count' }).nullable(),
        L: z.number().meta({ unit: 'count' }).nullable(),
        P: z.number().meta({ unit: 'count' }).nullable(),
        win: z.boolean().nullable(),
        instantiate_ms: z.number().meta({ unit: 'ms' }).nullable(),
        dispatches_per_replay: z.number().meta({ unit: 'count' }).nullable(),
      }),
    ),
    by_probe: z.array(
      z.strictObject({
        name: z.string(),
        passed: z.int().meta({ unit: 'count' }),
        of: z.int().meta({ unit: 'count' }),
      }),
    ),
    capture_errors: z.array(
      z.strictObject({
        class: z.enum(['expected-refusal', 'accepted-not-refused', 'other-refusal', 'probe-error']),
        where: z.string(),
        said: z.string(),
        count: z.int().meta({ unit: 'count' }),
      }),
    ),
    missing: z.int().meta({ unit: 'count' }),
    pass: z.boolean(),
    message: z.string(),
  })
  .meta({ id: 'Probe' });
export type Probe = z.infer<typeof ProbeSchema>;

export const SequentialSchema = z
  .strictObject({
    looks: z.array(
      z.strictObject({
        pairs: z.int().meta({ unit: 'count' }),
        fraction: z.number().meta({ unit: 'ratio' }),
        boundary: z
          .number()
          .meta({
            unit: 'z',
            description:
              'null: the look has no finite boundary (under 2 pairs, or it spends no alpha) and cannot stop the experiment',
          })
          .nullable(),
        critical: z.number().meta({ unit: 'statistic' }).nullable(),
        estimate: z.number().meta({ unit: 'ratio' }).nullable(),
        rci: z
          .tuple([z.number().meta({ unit: 'ratio' }), z.number().meta({ unit: 'ratio' })])
          .meta({ description: 'the repeated CI; null where the look has no boundary or an end is not finite' })
          .nullable(),
        decision: z.enum(['faster', 'slower', 'equivalent', 'continue', 'inconclusive']),
        blocks: z.array(z.int().meta({ unit: 'index' })),
      }),
    ),
    decision: z.enum(['faster', 'slower', 'equivalent', 'continue', 'inconclusive']),
    decided_at: z.int().meta({ unit: 'index' }).nullable(),
    max_blocks: z.int().meta({ unit: 'count' }),
  })
  .meta({ id: 'Sequential' });
export type Sequential = z.infer<typeof SequentialSchema>;

export const OutcomeSchema = z
  .enum([
    'faster',
    'slower',
    'equivalent',
    'inconclusive',
    'invalid',
    'not_testable',
    'pass',
    'fail',
    'cancelled',
    'failed',
  ])
  .meta({
    id: 'Outcome',
    description:
      "the experiment's outcome: a speed verdict; pass or fail for a capture probe; cancelled or failed when it ended early (orchestrator/stats/types.ts Outcome)",
  });
export type Outcome = z.infer<typeof OutcomeSchema>;

export const TraceProbeSchema = z
  .strictObject({
    planned: z.int().meta({ unit: 'count' }),
    missing: z.int().meta({ unit: 'count' }),
    floor: z.union([
      z.strictObject({
        source: z.literal('graphrt-chain'),
        backend: z.enum(['cpu', 'cuda']),
        device: z.string(),
        ns_per_node: z.number().meta({ unit: 'ns' }),
        node_cost: z.union([
          z.strictObject({
            ns: z.number().meta({
              unit: 'ns',
              description:
                "what a graph adds per node beyond the busy time of its kernel: the estimates' per-kernel term",
            }),
            kernel_busy_ns: z.number().meta({
              unit: 'ns',
              description:
                "the chain's busy time per kernel, traced (the union of its kernels' intervals over their count)",
            }),
          }),
          z.strictObject({ reason: z.string() }),
        ]),
        reps: z.int().meta({ unit: 'count' }),
        gpu: z.boolean().meta({ description: "false: graphrt's cpu backend, not a GPU floor; no estimate uses it" }),
      }),
      z.strictObject({
        source: z.literal('none'),
        reason: z.string(),
      }),
    ]),
    arms: z.array(
      z.strictObject({
        arm: z.string(),
        mode: z.string(),
        summary: z
          .strictObject({
            steps: z.int().meta({ unit: 'count' }),
            step_ns: z.number().meta({ unit: 'ns' }),
            busy_share: z.number().meta({ unit: 'ratio' }),
            busy_ns: z.number().meta({ unit: 'ns' }),
            kernels: z.number().meta({ unit: 'count' }),
            graph_kernels: z.number().meta({ unit: 'count' }),
            short_kernels: z.number().meta({ unit: 'count' }),
            gaps_ns: z.number().meta({ unit: 'ns' }),
            edge_idle_ns: z.number().meta({ unit: 'ns' }),
            graph_step_estimate_ns: z
              .number()
              .meta({
                unit: 'ns',
                description:
                  'idle at the step edges + device busy + kernels × the graph-node floor (orchestrator/stats/kernel-trace.ts); null, as recoverable and the floor, without a GPU floor',
              })
              .nullable(),
            recoverable_ns: z.number().meta({ unit: 'ns' }).nullable(),
            recoverable_share: z.number().meta({ unit: 'ratio' }).nullable(),
            pdl_upside_per_kernel_ns: z.number().meta({ unit: 'ns' }).nullable(),
            floor_ns: z.number().meta({ unit: 'ns' }).nullable(),
            histogram: z.array(z.int().meta({ unit: 'count' })).meta({
              description: 'gaps per bin of GAP_BINS_US (orchestrator/stats/kernel-trace.ts), the last bin open',
            }),
          })
          .nullable(),
        reason: z.string().optional(),
        estimate_reason: z
          .string()
          .meta({ description: 'a traced arm without a GPU floor: why its estimates are null' })
          .optional(),
        graphs: z.array(
          z.strictObject({
            graph_id: z.int().meta({ unit: 'id' }),
            nodes: z.int().meta({ unit: 'count' }),
            instantiations: z.int().meta({ unit: 'count' }),
            instantiate_ns: z.number().meta({ unit: 'ns' }),
          }),
        ),
        dropped: z.int().meta({ unit: 'count' }),
      }),
    ),
    graph_check: z
      .strictObject({
        eager_arm: z.string(),
        graph_arm: z.string(),
        estimate_ns: z.number().meta({ unit: 'ns' }),
        measured_ns: z.number().meta({ unit: 'ns' }),
        ratio: z.number().meta({ unit: 'ratio' }),
        differs: z.boolean().meta({ description: '|ratio − 1| > 0.1' }),
      })
      .nullable(),
    pass: z.boolean(),
    message: z.string(),
  })
  .meta({
    id: 'TraceProbe',
    description:
      "the trace probe of a resident command rank (orchestrator/stats/trace-probe.ts): each arm's traced steps against the card's graph-node floor measured by graphrt's chain",
  });
export type TraceProbe = z.infer<typeof TraceProbeSchema>;

export const SetAsideRepSchema = z
  .strictObject({
    block: z.int().meta({ unit: 'index' }),
    arm: z.string(),
    rep: z.int().meta({ unit: 'index' }),
    value: z.number().meta({ unit: 'metric' }),
    reason: z.string(),
  })
  .meta({ id: 'SetAsideRep' });
export type SetAsideRep = z.infer<typeof SetAsideRepSchema>;

export const ReferenceChoiceSchema = z
  .strictObject({
    control: z.string(),
    kind: z.enum(['control', 'pooled']),
    twin: z.string().nullable(),
    why: z.string(),
    set_aside: z.array(SetAsideRepSchema),
  })
  .meta({
    id: 'ReferenceChoice',
    description: 'what the comparisons against the control were paired with (orchestrator/stats/reference-arm.ts)',
  });
export type ReferenceChoice = z.infer<typeof ReferenceChoiceSchema>;

export const CarryOverCellSchema = z
  .strictObject({
    arm: z.string(),
    after: z.string(),
    n: z.int().meta({ unit: 'count' }),
    against: z.string(),
    effect: z.number().meta({ unit: 'ratio' }).nullable(),
    median_effect: z.number().meta({ unit: 'ratio' }).nullable(),
    p: z.number().meta({ unit: 'probability' }).nullable(),
    flagged: z.boolean(),
  })
  .meta({ id: 'CarryOverCell' });
export type CarryOverCell = z.infer<typeof CarryOverCellSchema>;

export const CarryOverSchema = z
  .strictObject({
    cells: z.array(CarryOverCellSchema),
    flagged: z.boolean(),
    message: z.string(),
  })
  .meta({ id: 'CarryOver', description: 'each arm after each preceding arm (orchestrator/stats/carry-over.ts)' });
export type CarryOver = z.infer<typeof CarryOverSchema>;

export const AnalysisSchema = z
  .strictObject({
    experiment: z.string(),
    plan: z.strictObject({
      name: z.string(),
      hash: z.string(),
      design: z.enum(['ab', 'leave-one-out', 'sweep', 'probe']),
      control: z.string(),
      blocks: z.int().meta({ unit: 'count' }),
      reps: z.int().meta({ unit: 'count' }),
      /** blocks.reps_per_block: auto, once the first block was measured: the blocks after it (jobs/block-sizing.ts) */
      block_sizing: z
        .strictObject({
          sizes: z
            .array(z.int().meta({ unit: 'count' }))
            .meta({ description: 'reps per arm of each block after the first' }),
          startup_ms: z.number().meta({
            unit: 'ms',
            description:
              "the start-up a later block pays inside its lease, as card time counts it: the first block's block-start to every hello, less a prepare() the later blocks run in the host phase, and its gates",
          }),
          lease_ms: z
            .number()
            .meta({ unit: 'ms', description: 'the lease a block of the first size is expected to take' }),
          statement: z.string(),
        })
        .optional(),
    }),
    metric: MetricSchema,
    alpha: z.number().meta({ unit: 'probability' }),
    min_effect: z.number().meta({ unit: 'ratio' }),
    verdict: OutcomeSchema,
    invalid_reasons: z.array(z.string()),
    capture_blockers: z
      .array(
        z.strictObject({
          arm: z.string(),
          message: z.string(),
          frame: z
            .strictObject({
              file: z.string(),
              line: z.int().meta({ unit: 'line' }),
            })
            .nullable(),
        }),
      )
      .meta({
        description:
          "graph arms whose capture failed in the user's program (jobs/capture-blocker.ts), one entry per blocker (an arm's first where its capture stopped, then the others the rank library's audit met): not measured; their comparisons are not_testable",
      })
      .optional(),
    failed_rank_output: z
      .array(
        z.strictObject({
          block: z.int().meta({ unit: 'index' }),
          attempt: z.int().meta({ unit: 'count' }),
          rank: z.int().meta({ unit: 'index' }),
          card: z.string(),
          host: z.string(),
          stdout: z.array(z.string()),
          stderr: z.array(z.string()),
        }),
      )
      .meta({
        description:
          'the last lines (at most 20 a stream, each escaped and bounded) each rank of a block that ended failed printed, of its latest failed attempt (jobs/rank-output-tail.ts); absent when no rank failed',
      })
      .optional(),
    gates: z.array(GateSchema),
    arms: z.array(ArmSchema),
    comparisons: z.array(ComparisonSchema),
    primary: ComparisonSchema.nullable(),
    aa: ComparisonSchema.nullable(),
    base_reference: ComparisonSchema.nullable().optional(),
    loo: LooSchema.nullable(),
    order: OrderSchema.nullable(),
    drift: z.array(DriftSchema),
    issues: z.array(z.string()),
    cancelled: z
      .array(
        z.strictObject({
          arm: z.string(),
          planned: z.int().meta({ unit: 'count' }),
          measured: z.int().meta({ unit: 'count' }),
          cancelled: z.int().meta({ unit: 'count' }),
        }),
      )
      .optional(),
    values: z.array(RepValueSchema),
    backend: z.strictObject({
      backends: z.array(z.string()),
      devices: z.array(z.string()),
      unsupported: z.array(
        z.strictObject({
          toggle: z.string(),
          backends: z.array(z.string()),
        }),
      ),
    }),
    probe: ProbeSchema.nullable(),
    trace: TraceProbeSchema.nullable().optional(),
    sequential: SequentialSchema.nullable().optional(),
    provenance: ProvenanceSchema.optional(),
    // report.json's own fields (ReportJsonSchema requires them); summary.json's analysis has neither
    version: z.literal(1).meta({ unit: 'format version' }).optional(),
    exit_code: z.int().meta({ unit: 'exit code' }).optional(),
    stopped: z
      .strictObject({
        state: z.enum(['cancelled', 'failed']),
        reason: z.string(),
        user_input: z.boolean(),
      })
      .nullable()
      .optional(),
    reference: ReferenceChoiceSchema.nullable().optional(),
    carry_over: CarryOverSchema.nullable().optional(),
  })
  .meta({ id: 'Analysis' });
export type Analysis = z.infer<typeof AnalysisSchema>;

const reportOwn = {
  version: z.literal(1).meta({ unit: 'format version' }),
  exit_code: z.int().meta({ unit: 'exit code' }),
};

/** report.json: the Analysis with its format version and the exit code under the default --fail-on. */
export const ReportJsonSchema = AnalysisSchema.extend(reportOwn);
export type ReportJson = z.infer<typeof ReportJsonSchema>;

/**
 * The same document for the JSON Schema: the Analysis by reference (summary.schema.json refers to
 * `#/$defs/Analysis`, which an extended copy would not emit), its own two fields required beside
 * it. Open on that side only: the Analysis already refuses every field it does not know.
 */
const ReportJsonDocument = z.intersection(AnalysisSchema, z.looseObject(reportOwn));

/**
 * What the generated JSON Schemas (report.json's, summary.json's) leave out for their readers:
 * z.int()'s safe-integer bounds say nothing a reader needs (every count and index is far inside them).
 */
export function readerLayout({ jsonSchema: s }: { jsonSchema: Record<string, unknown> }): void {
  if (s.type === 'integer' && s.minimum === Number.MIN_SAFE_INTEGER && s.maximum === Number.MAX_SAFE_INTEGER) {
    delete s.minimum;
    delete s.maximum;
  }
}

/** The JSON Schema of report.json, as docs/schemas/report.schema.json ships it. */
export function reportJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(ReportJsonDocument, {
    target: 'draft-2020-12',
    unrepresentable: 'throw',
    override: readerLayout,
  });
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://orch.invalid/schemas/report.schema.json',
    title: 'orch report.json',
    description:
      'The machine report of an experiment (orchestrator/report/render-json.ts), generated from orchestrator/stats/analysis-schema.ts by `npm run gen:schemas`: the Analysis with its version and exit code. Every number carries "unit": metric = the unit of metric.name (ms per step by default); ratio = a fraction of the reference (0.012 = +1.2 %); ratio per position = a relative change per step of run position; log ratio = a natural-log ratio; probability; count; statistic = a dimensionless test statistic; z = a standard-normal boundary; index, position = 0-based places; ms; MHz; W; bytes.',
    ...generated,
  };
}

/** Where the generated JSON Schema lives, relative to the repository root. */
export const REPORT_SCHEMA_PATH = 'docs/schemas/report.schema.json';
