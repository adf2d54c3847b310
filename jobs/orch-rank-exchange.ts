/**
 * The exchange lines of the orch-rank protocol (ranklib/PROTOCOL.md "Exchange"): bytes from rank
 * 0 to every rank of a gang through the worker, for a program that needs a shared secret before
 * its collectives can start (an NCCL unique id) and runs no TCP store of its own.
 *
 *   rank → worker (stdout): {"v":1,"type":"exchange","key":K,"data":B}   B: base64 on rank 0, null elsewhere
 *   worker → rank (stdin):  {"v":1,"op":"exchange","key":K,"data":B}     rank 0's bytes, to every rank
 *                           {"v":1,"op":"exchange","key":K,"error":"…"}  no bytes within the deadline
 *
 * A rank may exchange at any time after its start (before hello, or inside a request); the
 * worker routes the bytes through the gang's staging in Redis (store/gang-staging.ts).
 */
import { z } from 'zod';

export const EXCHANGE_KEY = /^[A-Za-z0-9_.-]{1,64}$/;
/** Rank 0's bytes, decoded: at most this many. */
export const MAX_EXCHANGE_BYTES = 4096;
/** Exchanges per rank per attempt: a 17th is a protocol fault. */
export const MAX_EXCHANGES = 16;

const base64 = z
  .string()
  .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'base64')
  .refine(
    (s) => Buffer.from(s, 'base64').length <= MAX_EXCHANGE_BYTES,
    `at most ${MAX_EXCHANGE_BYTES} bytes once decoded`,
  );

export const OrchRankExchangeSchema = z.strictObject({
  v: z.literal(1),
  type: z.literal('exchange'),
  key: z.string().regex(EXCHANGE_KEY, `a key of 1–64 characters A-Z a-z 0-9 _ . -`),
  data: base64.nullable(),
});
export type OrchRankExchange = z.infer<typeof OrchRankExchangeSchema>;

/** The stdin line answering an exchange: rank 0's bytes, or why there are none. */
export function exchangeAnswer(key: string, result: { data: Buffer } | { error: string }): string {
  return 'data' in result
    ? JSON.stringify({ v: 1, op: 'exchange', key, data: result.data.toString('base64') })
    : JSON.stringify({ v: 1, op: 'exchange', key, error: result.error });
}
