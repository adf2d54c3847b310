import { GRAPHRT_EXIT_CODE_TABLE } from './rank-protocol-constants.ts';

/** graphrt's error codes and the exit code each ends a process with (native/PROTOCOL.md "Error codes"). */
export const GRAPHRT_EXIT_CODES = GRAPHRT_EXIT_CODE_TABLE;
export type GraphrtErrorCode = keyof typeof GRAPHRT_EXIT_CODES;
export const GRAPHRT_ERROR_CODES = Object.keys(GRAPHRT_EXIT_CODES) as [GraphrtErrorCode, ...GraphrtErrorCode[]];

/**
 * Exits a retry cannot fix: a bug, bad input, no backend, a failed gate, a CUDA fault. A busy card
 * (4) and a lost peer (7) may pass on the next attempt.
 */
const RETRYABLE: ReadonlySet<GraphrtErrorCode> = new Set(['CARD_BUSY', 'RANK_LOST']);
export const DETERMINISTIC_EXITS: ReadonlySet<number> = new Set(
  GRAPHRT_ERROR_CODES.filter((c) => !RETRYABLE.has(c)).map((c) => GRAPHRT_EXIT_CODES[c]),
);
