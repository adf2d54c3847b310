/**
 * The graphrt JSON-lines protocol, mirrored in zod (native/PROTOCOL.md "Lines"; a change there is
 * a change here, in the same commit). Every line is strict: a field graphrt adds without this
 * mirror knowing fails the parse, so drift between the two is caught by the tests that drive the
 * binary (test/native/).
 */
import { z } from 'zod';
import { OrchError } from './errors.ts';
import { GRAPHRT_ERROR_CODES, GRAPHRT_EXIT_CODES } from './graphrt-exit-codes.ts';
import { GRAPHRT_FEATURES, GRAPHRT_TOGGLES, type GraphrtFeature } from './graphrt-toggles.ts';
import { MAX_RANK_LINE_BYTES, quoteLine } from './line-limit.ts';
import { repLineCore } from './rep-line.ts';
import { describeIssues } from './schema-issues.ts';

const v = z.literal(1);
const id = z.string();
const count = z.int().min(0);
const hash = z.string().regex(/^[0-9a-f]{16}$/, 'a 16-digit lowercase hex FNV-1a 64 hash');
const finalTrue = z.literal(true);

export const GRAPHRT_WORKLOADS = ['chain', 'decode', 'train', 'probe'] as const;
export const GRAPHRT_PROBES = [
  'launch_counter',
  'unpinned_diverges',
  'recapture_refusals',
  'pinned_exact',
  'replay_dispatch',
] as const;

const features = z.strictObject(
  Object.fromEntries(GRAPHRT_FEATURES.map((f) => [f, z.boolean()])) as Record<GraphrtFeature, z.ZodBoolean>,
);

export const HelloSchema = z.strictObject({
  v,
  type: z.literal('hello'),
  id: id.optional(),
  backend: z.enum(['cpu', 'cuda']),
  device: z.string(),
  sm: z.string().nullable(),
  sms: count,
  driver: z.string(),
  features,
  version: z.string(),
  pid: z.int().positive(),
  /** multi-rank (PROTOCOL.md "Multi-rank"): the gang's size and this process's rank; 1 and 0 alone */
  world: z.int().positive(),
  rank: count,
  final: finalTrue.optional(),
});
export type Hello = z.infer<typeof HelloSchema>;

/** failed_ranks: multi-rank only, the capture vote's outcome (the ranks whose capture failed) */
const captureCommon = { v, type: z.literal('capture'), id, arm: z.string(), failed_ranks: z.array(count).optional() };
export const CaptureSchema = z.discriminatedUnion('ok', [
  z.strictObject({
    ...captureCommon,
    ok: z.literal(true),
    nodes: count,
    launches: count,
    capture_ms: z.number().min(0),
    instantiate_ms: z.number().min(0),
  }),
  z.strictObject({ ...captureCommon, ok: z.literal(false), reason: z.string().min(1), fallback: z.literal('eager') }),
]);
export type Capture = z.infer<typeof CaptureSchema>;

export { type ClockReading, ClockReadingSchema } from './rep-line.ts';

export const TrainReportSchema = z.strictObject({ L: count, P: count, win: z.boolean() });
export type TrainReport = z.infer<typeof TrainReportSchema>;

/**
 * The rep's span on the rank's monotonic clock (CLOCK_MONOTONIC, ns; system-wide, so comparable
 * between the processes of one host): served from `t_start_ns` (before capture and warm-up) to
 * `t_end_ns` (last step done). Not integers in the schema: past 2^53 ns (104 days of uptime) a
 * JSON number rounds to a few ns. Optional: a graphrt older than the field still parses.
 */
export const repSpanFields = {
  t_start_ns: z.number().min(0).optional(),
  t_end_ns: z.number().min(0).optional(),
};

/** graphrt's rep: the core every rep line has (jobs/rep-line.ts) and graphrt's own fields. */
export const RepSchema = z.strictObject({
  ...repLineCore,
  workload: z.enum(GRAPHRT_WORKLOADS),
  backend: z.enum(['cpu', 'cuda']),
  warmup: count,
  steps: z.int().positive(),
  /** finite numbers only: a null or a string is refused here, never committed as a measurement */
  step_ms: z.array(z.number().min(0)),
  /** graph reps: the device time of the eager PDL step that settles the launch state (native/PROTOCOL.md); null on eager reps. Optional: older graphrt */
  settle_ms: z.number().min(0).nullable().optional(),
  /** under orch's injection library in trace mode only: device busy time per kernel, ns (native/PROTOCOL.md) */
  kernel_busy_ns: z.number().min(0).optional(),
  launches_per_step: count,
  dispatches_per_step: count,
  collectives_per_step: count,
  rank: count,
  world: z.int().positive(),
  nodes: count.nullable(),
  hashes: z.array(hash),
  unsupported: z.array(z.enum(GRAPHRT_TOGGLES)),
  train: TrainReportSchema.optional(),
});
export type Rep = z.infer<typeof RepSchema>;

export const GateSchema = z.strictObject({
  v,
  type: z.literal('gate'),
  id,
  arm: z.string(),
  name: z.literal('identity'),
  pass: z.boolean(),
  mode: z.enum(['graph', 'eager']),
  replays: z.int().positive(),
  first_bad_replay: z.int().positive().nullable(),
  eager_hashes: z.array(hash),
  graph_hashes: z.array(hash),
  nodes: count.nullable(),
  launches_per_step: count,
  collectives_per_step: count,
  rank: count,
  world: z.int().positive(),
  /** the gate's span on the rank's clock, as a rep's (optional: older graphrt) */
  ...repSpanFields,
  /** absent only in `run` mode on a failed gate: the GATE_FAILED error line follows */
  final: finalTrue.optional(),
});
export type Gate = z.infer<typeof GateSchema>;

export const ProbeSchema = z.strictObject({
  v,
  type: z.literal('probe'),
  id,
  name: z.enum(GRAPHRT_PROBES),
  pass: z.boolean(),
  detail: z.record(z.string(), z.unknown()),
  final: finalTrue.optional(),
});
export type Probe = z.infer<typeof ProbeSchema>;

export const ErrorLineSchema = z.strictObject({
  v,
  type: z.literal('error'),
  id: id.optional(),
  code: z.enum(GRAPHRT_ERROR_CODES),
  message: z.string().min(1),
  exit_code: z.int().min(1).max(7),
  final: finalTrue,
});
export type ErrorLine = z.infer<typeof ErrorLineSchema>;

export const GraphrtLineSchema = z.discriminatedUnion('type', [
  HelloSchema,
  CaptureSchema,
  RepSchema,
  GateSchema,
  ProbeSchema,
  ErrorLineSchema,
]);
export type GraphrtLine = z.infer<typeof GraphrtLineSchema>;

/** The last line of an answer (PROTOCOL.md: a `capture` line never is). */
export function isFinal(line: GraphrtLine): boolean {
  return 'final' in line && line.final === true;
}

/** A line graphrt wrote that is not valid JSON or not a protocol line: a graphrt bug or a version skew. */
export class GraphrtProtocolError extends OrchError {
  readonly line: string;
  constructor(message: string, line: string, cause?: unknown) {
    super('GRAPHRT_PROTOCOL', `graphrt protocol: ${message}: ${quoteLine(line)}`, {
      hint: 'graphrt and orch disagree on native/PROTOCOL.md: rebuild graphrt (npm run build) from this checkout',
      cause,
    });
    this.line = line;
  }
}

/** Parses and validates one stdout line of graphrt; throws GraphrtProtocolError. */
export function parseGraphrtLine(line: string): GraphrtLine {
  if (Buffer.byteLength(line) > MAX_RANK_LINE_BYTES)
    throw new GraphrtProtocolError(`a line longer than ${MAX_RANK_LINE_BYTES} bytes`, line);
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch (err) {
    throw new GraphrtProtocolError('not JSON', line, err);
  }
  const r = GraphrtLineSchema.safeParse(json);
  if (!r.success) {
    const type =
      typeof json === 'object' && json !== null && typeof (json as { type?: unknown }).type === 'string'
        ? (json as { type: string }).type
        : '';
    throw new GraphrtProtocolError(describeIssues(r.error, type), line, r.error);
  }
  if (r.data.type === 'error' && r.data.exit_code !== GRAPHRT_EXIT_CODES[r.data.code])
    throw new GraphrtProtocolError(
      `error ${r.data.code} must exit ${GRAPHRT_EXIT_CODES[r.data.code]}, says ${r.data.exit_code}`,
      line,
    );
  return r.data;
}
