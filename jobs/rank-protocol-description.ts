/**
 * The rank protocol described once: its facts (jobs/rank-protocol-constants.ts) and the shapes of
 * its messages as zod schemas, emitted as ranklib/protocol.json (`npm run gen:protocol`) with each
 * shape as JSON Schema. The answer lines a worker reads are jobs/orch-rank-protocol.ts's schemas;
 * the requests, the exchange and the host phase's lines are defined here.
 */
import { z } from 'zod';
import {
  OrchRankErrorSchema,
  OrchRankHelloSchema,
  OrchRankIdentitySchema,
  OrchRankRepSchema,
  OrchRankTraceSchema,
} from './orch-rank-protocol.ts';
import {
  EXCHANGE_LIMITS,
  GRAPHRT_EXIT_CODE_TABLE,
  GRAPHRT_FEATURE_NAMES,
  GRAPHRT_TOGGLE_NAMES,
  HOST_PHASE,
  INJECT_ABI,
  ORCH_RANK_ERROR_CODE_NAMES,
  ORCH_RANK_PROTOCOL_NAME,
  RANK_LIBRARY_EXIT_CODES,
  RANK_LINE_MAX_BYTES,
  RANK_PROTOCOL_VERSION,
  RANK_REQUESTS_IN_FLIGHT_MAX,
  TOGGLE_ON_STRINGS,
} from './rank-protocol-constants.ts';

const v = z.literal(RANK_PROTOCOL_VERSION);
const toggles = z.record(z.string().min(1), z.union([z.boolean(), z.string()]));
const common = { v, id: z.string(), arm: z.string(), toggles, seed: z.int().min(0).optional() };

export const RankRepRequestSchema = z.strictObject({
  ...common,
  op: z.literal('rep'),
  type: z.literal('rep').optional(),
  warmup: z.int().min(0),
  steps: z.int().min(1),
});
export type RankRepRequest = z.infer<typeof RankRepRequestSchema>;
export const RankTraceRequestSchema = z.strictObject({
  ...common,
  op: z.literal('trace'),
  type: z.literal('trace').optional(),
  warmup: z.int().min(0),
  steps: z.int().min(1),
});
export type RankTraceRequest = z.infer<typeof RankTraceRequestSchema>;
export const RankIdentityRequestSchema = z.strictObject({
  ...common,
  op: z.literal('identity'),
  type: z.literal('identity').optional(),
  toggle: z.string(),
  replays: z.int().min(1),
});
export type RankIdentityRequest = z.infer<typeof RankIdentityRequestSchema>;

const exchangeKey = z.string().regex(new RegExp(EXCHANGE_LIMITS.keyPattern));
const base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/);

/** rank → worker: rank 0's bytes (base64, at most EXCHANGE_LIMITS.maxBytes decoded), null on every other rank. */
export const RankExchangeLineSchema = z.strictObject({
  v,
  type: z.literal('exchange'),
  key: exchangeKey,
  data: base64.nullable(),
});
export type RankExchangeLine = z.infer<typeof RankExchangeLineSchema>;
/** worker → rank: rank 0's bytes, or why there are none. */
export const RankExchangeReplySchema = z.union([
  z.strictObject({ v, op: z.literal('exchange'), key: exchangeKey, data: base64 }),
  z.strictObject({ v, op: z.literal('exchange'), key: exchangeKey, error: z.string().min(1) }),
]);
export type RankExchangeReply = z.infer<typeof RankExchangeReplySchema>;

/** rank → worker, host phase: prepare() done, no device touched. */
export const RankPreparedLineSchema = z.strictObject({ v, type: z.literal('prepared'), prepare_ms: z.number().min(0) });
export type RankPreparedLine = z.infer<typeof RankPreparedLineSchema>;
/** worker → rank, host phase: the lease is granted; `devices` becomes CUDA_VISIBLE_DEVICES. */
export const RankOpenRequestSchema = z.strictObject({ v, op: z.literal('open'), devices: z.string() });
export type RankOpenRequest = z.infer<typeof RankOpenRequestSchema>;

const MESSAGES = {
  'request.rep': RankRepRequestSchema,
  'request.trace': RankTraceRequestSchema,
  'request.identity': RankIdentityRequestSchema,
  'request.open': RankOpenRequestSchema,
  'request.exchange': RankExchangeReplySchema,
  'line.hello': OrchRankHelloSchema,
  'line.rep': OrchRankRepSchema,
  'line.identity': OrchRankIdentitySchema,
  'line.trace': OrchRankTraceSchema,
  'line.error': OrchRankErrorSchema,
  'line.exchange': RankExchangeLineSchema,
  'line.prepared': RankPreparedLineSchema,
} as const;

/** protocol.json's content: every fact and every message shape (JSON Schema), in a stable order. */
export function rankProtocolDescription(): Record<string, unknown> {
  const messages: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(MESSAGES))
    messages[name] = z.toJSONSchema(schema, { unrepresentable: 'any' });
  return {
    about:
      'The rank protocol described once: generated from jobs/rank-protocol-description.ts by `npm run gen:protocol`; do not edit.',
    protocol: ORCH_RANK_PROTOCOL_NAME,
    version: RANK_PROTOCOL_VERSION,
    limits: { line_max_bytes: RANK_LINE_MAX_BYTES, requests_in_flight_max: RANK_REQUESTS_IN_FLIGHT_MAX },
    toggle_on_strings: TOGGLE_ON_STRINGS,
    graphrt: { toggles: GRAPHRT_TOGGLE_NAMES, features: GRAPHRT_FEATURE_NAMES, exit_codes: GRAPHRT_EXIT_CODE_TABLE },
    rank_library: { exit_codes: RANK_LIBRARY_EXIT_CODES, error_codes: ORCH_RANK_ERROR_CODE_NAMES },
    exchange: EXCHANGE_LIMITS,
    host_phase: HOST_PHASE,
    inject_abi: INJECT_ABI,
    messages,
  };
}
