/**
 * The orch-rank dialect of the rank protocol (ranklib/PROTOCOL.md; a change there is a change
 * here, in the same commit): what a user's program speaks through a rank library, the Python
 * `orch_rank` or `orch_rank.h`. Its lines are parsed here, strictly, and its requests written
 * here; the worker turns its answers into command-runtime lines (jobs/command-line.ts) before
 * anything else reads them (worker/command/resident-answer.ts).
 */
import { z } from 'zod';
import type { BlockArm, BlockJob } from './block-job.ts';
import { MAX_RANK_LINE_BYTES, quoteLine } from './line-limit.ts';
import { OrchRankExchangeSchema } from './orch-rank-exchange.ts';
import {
  ORCH_RANK_ERROR_CODE_NAMES,
  ORCH_RANK_PROTOCOL_NAME,
  RANK_PROTOCOL_VERSION,
} from './rank-protocol-constants.ts';
import { repLineCore } from './rep-line.ts';
import { describeIssues } from './schema-issues.ts';

export const ORCH_RANK_PROTOCOL = ORCH_RANK_PROTOCOL_NAME;
/** The protocol version this worker speaks (ORCH_RANK_PROTOCOL in the rank's environment). */
export const ORCH_RANK_VERSION = RANK_PROTOCOL_VERSION;

const v = z.literal(1);
const hash = z.string().regex(/^[0-9a-f]{16}$/, '16 lowercase hex digits');
const name = z.string().min(1).max(128);
/** One measured step's output hashes, by output name. */
const stepHashes = z.record(name, hash);
const ms = z.number().min(0);
const counters = z.record(name, z.number()).optional();
const span = { t_start_ns: z.number().min(0), t_end_ns: z.number().min(0) };

const perStep = z.array(z.int().min(0));

/**
 * Which steps a rep's launch counts are of (ranklib/PROTOCOL.md "Launch counts and clocks"): its
 * warm-up steps, the same steps as its timed ones, with the injection library paused for the timed
 * steps (CUPTI attached slows them); or its timed steps (no warm-up, or a library without pause).
 * Absent: timed (a rank library from before pause).
 */
export const COUNTED_STEPS = ['warmup', 'timed'] as const;
export type CountedSteps = (typeof COUNTED_STEPS)[number];

/**
 * What orch's CUPTI injection library counted, per counted step (ranklib/PROTOCOL.md "Launch
 * counts and clocks"), or why nothing was counted: never zeros standing in for "not available".
 */
export const LaunchCountsSchema = z.discriminatedUnion('source', [
  z.strictObject({
    source: z.literal('cupti'),
    counted: z.enum(COUNTED_STEPS).optional(),
    kernels: perStep,
    captured: z.int().min(0),
    graphs: perStep,
    memcpy: perStep,
    memset: perStep,
    syncs: perStep,
  }),
  z.strictObject({ source: z.literal('none'), reason: z.string().min(1).max(1000) }),
]);
export type LaunchCounts = z.infer<typeof LaunchCountsSchema>;

export { RepClocksSchema } from './rep-line.ts';

export const OrchRankHelloSchema = z.strictObject({
  v,
  type: z.literal('hello'),
  protocol: z.literal(ORCH_RANK_PROTOCOL),
  version: z.literal(ORCH_RANK_VERSION),
  name,
  library: z.string().min(1).max(128),
  backend: z.enum(['cuda', 'cpu']),
  device: z.string().max(256),
  pid: z.int().positive(),
  timing: z.enum(['cuda-events', 'host-clock']),
  hash: z.string().min(1).max(64),
  toggles: z.array(name).max(256),
  outputs: z.array(name).min(1).max(256),
  /** The host phase's prepare() and setup(), ms (ranklib/PROTOCOL.md "Host phase"). */
  prepare_ms: ms.optional(),
  setup_ms: ms.optional(),
  final: z.literal(true),
});
export type OrchRankHello = z.infer<typeof OrchRankHelloSchema>;

/** A rank library's rep: the core every rep line has (jobs/rep-line.ts), `graph` and `warmup_ms` always given, and the library's own fields. */
export const OrchRankRepSchema = z.strictObject({
  ...repLineCore,
  graph: z.enum(['fresh', 'reused']).nullable(),
  warmup_ms: z.array(ms),
  step_ms: z.array(ms).min(1),
  hashes: z.array(stepHashes),
  counters,
  launches: LaunchCountsSchema.optional(),
  xid_events: z.int().min(0).optional(),
  ...span,
});
export type OrchRankRep = z.infer<typeof OrchRankRepSchema>;

export const OrchRankIdentitySchema = z.strictObject({
  v,
  type: z.literal('identity'),
  id: z.string(),
  arm: z.string(),
  mode: z.enum(['graph', 'eager']),
  replays: z.int().positive(),
  eager: z.array(stepHashes),
  graph: z.array(stepHashes),
  counters,
  t_start_ns: z.number().min(0).optional(),
  t_end_ns: z.number().min(0).optional(),
  final: z.literal(true),
});
export type OrchRankIdentity = z.infer<typeof OrchRankIdentitySchema>;

const ns = z.int().min(0);

/**
 * The answer to a `trace` request (ranklib/PROTOCOL.md "trace"): the steps the rank library
 * delimited and the kernels orch's injection library traced in trace mode, on one clock (CUPTI's),
 * and each graph instantiated; or why nothing was traced. Only in a `design: probe` of a command
 * workload: tracing slows every launch, so its steps are never a measurement.
 */
export const OrchRankTraceSchema = z.strictObject({
  v,
  type: z.literal('trace'),
  id: z.string(),
  arm: z.string(),
  mode: z.enum(['graph', 'eager']),
  trace: z.discriminatedUnion('source', [
    z.strictObject({
      source: z.literal('cupti'),
      steps: z.array(z.strictObject({ start_ns: ns, end_ns: ns })).min(1),
      kernels: z.array(z.strictObject({ start_ns: ns, end_ns: ns, graph_id: ns, stream_id: ns })),
      graphs: z.array(z.strictObject({ graph_id: ns, exec_id: ns, nodes: ns, instantiate_ns: ns })),
      /** records CUPTI or the library's store lost: the busy share is a lower bound when > 0 */
      dropped: ns,
    }),
    z.strictObject({ source: z.literal('none'), reason: z.string().min(1).max(1000) }),
  ]),
  ...span,
  final: z.literal(true),
});
export type OrchRankTrace = z.infer<typeof OrchRankTraceSchema>;

export const ORCH_RANK_ERROR_CODES = ORCH_RANK_ERROR_CODE_NAMES;

/**
 * Where the program's own code stood when the error was raised: the innermost frame outside the
 * rank library and the installed packages (torch, transformers), so a capture blocker names the
 * user's line, not torch's.
 */
export const ErrorFrameSchema = z.strictObject({ file: z.string().min(1).max(4096), line: z.int().min(0) });
export type ErrorFrame = z.infer<typeof ErrorFrameSchema>;

/** The most other blockers one CAPTURE_FAILED answer lists (the Python library's MAX_OTHER_BLOCKERS). */
export const OTHER_BLOCKERS_MAX = 16;

/** CAPTURE_FAILED's other blockers: what the library's audit met in the same body, each at its line. */
export const OtherBlockersSchema = z
  .array(z.strictObject({ message: z.string().min(1).max(4096), frame: ErrorFrameSchema.nullable() }))
  .max(OTHER_BLOCKERS_MAX);

export const OrchRankErrorSchema = z.strictObject({
  v,
  type: z.literal('error'),
  id: z.string().optional(),
  code: z.enum(ORCH_RANK_ERROR_CODES),
  message: z.string().min(1),
  fatal: z.boolean(),
  frame: ErrorFrameSchema.optional(),
  /** CAPTURE_FAILED: the other blockers the library's audit met in the same body, each at its line (ranklib/PROTOCOL.md "error") */
  other_blockers: OtherBlockersSchema.optional(),
  final: z.literal(true),
});
export type OrchRankError = z.infer<typeof OrchRankErrorSchema>;

/** The host phase's first line (ranklib/PROTOCOL.md "Host phase"): prepare() ran with no device visible; the rank waits for `open`. */
export const OrchRankPreparedSchema = z.strictObject({ v, type: z.literal('prepared'), prepare_ms: ms });
export type OrchRankPrepared = z.infer<typeof OrchRankPreparedSchema>;

export const OrchRankLineSchema = z.discriminatedUnion('type', [
  OrchRankHelloSchema,
  OrchRankRepSchema,
  OrchRankIdentitySchema,
  OrchRankTraceSchema,
  OrchRankErrorSchema,
  OrchRankExchangeSchema,
  OrchRankPreparedSchema,
]);
export type OrchRankLine = z.infer<typeof OrchRankLineSchema>;

/** What a hello must say before the rest of it is read: another version's hello has other fields. */
const VersionSchema = z.object({ type: z.literal('hello'), protocol: z.unknown(), version: z.unknown() });

/**
 * One line of the protocol stream, validated; throws an Error whose message says what is wrong
 * (the worker quotes it as the rank's protocol fault). A hello of another protocol or version is
 * named as such, not as a field mismatch.
 */
export function parseOrchRankLine(raw: string): OrchRankLine {
  if (Buffer.byteLength(raw) > MAX_RANK_LINE_BYTES) throw new Error(`a line longer than ${MAX_RANK_LINE_BYTES} bytes`);
  let json: unknown;
  try {
    json = JSON.parse(rebaseTraceTimes(raw));
  } catch {
    throw new Error(
      `not a JSON line of the orch-rank protocol (the program printed to its protocol stream; print to stderr, or let orch_rank move stdout there): ${quoteLine(raw)}`,
    );
  }
  const hello = VersionSchema.safeParse(json);
  if (hello.success && (hello.data.protocol !== ORCH_RANK_PROTOCOL || hello.data.version !== ORCH_RANK_VERSION)) {
    throw new Error(
      `the program speaks ${JSON.stringify(hello.data.protocol)} version ${JSON.stringify(hello.data.version)}; this worker speaks ${ORCH_RANK_PROTOCOL} version ${ORCH_RANK_VERSION} (build the program against this checkout's ranklib/)`,
    );
  }
  const r = OrchRankLineSchema.safeParse(json);
  if (!r.success) {
    const type =
      typeof json === 'object' && json !== null && typeof (json as { type?: unknown }).type === 'string'
        ? (json as { type: string }).type
        : '';
    // the first few issues and their count: a trace of 5 000 kernels can break one rule 10 000 times
    throw new Error(`not an orch-rank line: ${describeIssues(r.error, type, 3)}`);
  }
  return r.data;
}

const TRACE_TIME = /"(start_ns|end_ns)":(\d+)/g;

/**
 * A trace answer's step and kernel times counted from the earliest of them, exactly (BigInt, on the
 * line's text, before JSON.parse rounds them): CUPTI's own clock is ns since the epoch, past 2^53,
 * where a JSON number is no longer an exact integer. orch's injection library gives times since its
 * trace began (native/inject/orch_inject.h), which need no rebasing; another library, or one built
 * before, gives CUPTI's. Only differences between these times mean anything (orchestrator/stats/
 * kernel-trace.ts), so the rebased answer says the same. Any other line is returned as it is.
 */
export function rebaseTraceTimes(raw: string): string {
  if (!raw.includes('"trace"')) return raw;
  let min: bigint | null = null;
  let big = false;
  for (const m of raw.matchAll(TRACE_TIME)) {
    const t = BigInt(m[2] ?? '0');
    if (t > BigInt(Number.MAX_SAFE_INTEGER)) big = true;
    if (min === null || t < min) min = t;
  }
  if (!big || min === null) return raw;
  const origin = min;
  return raw.replace(
    TRACE_TIME,
    (_, key: string, digits: string) => `"${key}":${(BigInt(digits) - origin).toString()}`,
  );
}

/** The host phase's `open`: the rank's devices, after which it runs setup() and says hello. */
export function orchRankOpen(devices: string): string {
  return JSON.stringify({ v: 1, op: 'open', devices });
}

/** One request line: a rep, a trace probe's trace (a rep's fields), or the identity gate of `job.gates.identity`'s toggle. */
export function orchRankRequest(
  job: BlockJob,
  op: { id: string; op: 'rep' | 'identity' | 'probe' | 'trace'; arm: BlockArm },
): string {
  const common = { v: 1, id: op.id, op: op.op, arm: op.arm.name, toggles: op.arm.toggles, seed: 1 };
  if (op.op === 'rep' || op.op === 'trace') return JSON.stringify({ ...common, warmup: job.warmup, steps: job.steps });
  if (op.op === 'identity') {
    const gate = job.gates.identity;
    if (gate === null || gate.toggle === undefined)
      throw new Error(`orchRankRequest: identity op ${op.id} for block ${job.block}, whose gate names no toggle`);
    return JSON.stringify({ ...common, toggle: gate.toggle, replays: gate.replays });
  }
  throw new Error(`orchRankRequest: a resident command rank has no ${op.op} op`);
}
