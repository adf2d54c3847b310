/**
 * The rank protocol's facts, stated once (ranklib/PROTOCOL.md, native/PROTOCOL.md): graphrt's
 * toggles and hello features, the line limit, the exit codes, the error codes, how a toggle's value
 * reads as on, the exchange's bounds, the host phase's names and the CUPTI injection ABI.
 *
 * Pure data, imported by TypeScript as is; `npm run gen:protocol` (scripts/gen-protocol.ts) writes
 * them into ranklib/protocol.json, the Python library (ranklib/python/orch_rank/_protocol.py), the
 * C++ header's generated section (ranklib/cpp/orch_rank.h) and native/ (include/graphrt/
 * protocol_generated.h); test/conformance/generated-files.test.ts fails when one of them is stale.
 */
import { isOneOf } from './one-of.ts';

/** The protocol version every implementation speaks (`"v"` of every line, hello's `version`). */
export const RANK_PROTOCOL_VERSION = 1;
export const ORCH_RANK_PROTOCOL_NAME = 'orch-rank';

/**
 * The longest line, in bytes, its `\n` not counted, either way (requests and answers): a longer
 * request is answered BAD_REQUEST; a longer answer line is a protocol fault at the worker.
 */
export const RANK_LINE_MAX_BYTES = 1024 * 1024;

/**
 * The most requests the worker has written to a rank and not yet had answered: the one being
 * answered and one behind it (the one-deep pipeline, worker/rank-protocol.ts). A rank library's
 * exchange() holds the lines it reads while it waits for its answer, at most this many (they can
 * only be those requests); one more is refused (ranklib/PROTOCOL.md "Exchange").
 */
export const RANK_REQUESTS_IN_FLIGHT_MAX = 2;

/** graphrt's toggles (request `toggles` keys), in graphrt's order (native/src/request.cpp). */
export const GRAPHRT_TOGGLE_NAMES = [
  'graph',
  'pdl',
  'overlap',
  'split_combine',
  'pin',
  'freeze_pointer',
  'lazy_init',
  'allreduce',
] as const;
/** The keys of graphrt hello's `features`: what a build can do on its backend. */
export const GRAPHRT_FEATURE_NAMES = ['graph', 'pdl', 'overlap', 'collectives'] as const;

/** graphrt's error codes and the exit code each ends a process with (native/PROTOCOL.md "Error codes"). */
export const GRAPHRT_EXIT_CODE_TABLE = {
  INTERNAL: 1,
  BAD_FLAG: 2,
  BAD_REQUEST: 2,
  UNKNOWN_WORKLOAD: 2,
  UNKNOWN_TOGGLE: 2,
  BAD_PARAM: 2,
  BACKEND_UNAVAILABLE: 3,
  CARD_BUSY: 4,
  GATE_FAILED: 5,
  CUDA_ERROR: 6,
  RANK_LOST: 7,
} as const;

/**
 * A rank library's exit codes: 0 when stdin closed, FAILED after a fatal error line or a start
 * that failed (setup raised), USER_ERROR when the program broke a rule the library checks before
 * hello (prepare() touched CUDA, a malformed `open` line).
 */
export const RANK_LIBRARY_EXIT_CODES = { OK: 0, FAILED: 1, USER_ERROR: 2 } as const;

/** The `code` of a rank library's `error` line. */
export const ORCH_RANK_ERROR_CODE_NAMES = [
  'BAD_REQUEST',
  'UNKNOWN_TOGGLE',
  'CAPTURE_FAILED',
  'STEP_FAILED',
  'INTERNAL',
  'PREPARE_TOUCHED_CUDA',
] as const;

/**
 * A toggle's value reads as on when it is `true` or one of these strings (a swept toggle's value);
 * `false`, an absent toggle and every other string read as off. One rule for orch's arms
 * (jobs/block-job.ts), the libraries' graph toggle and a program's `on()`.
 */
export const TOGGLE_ON_STRINGS = ['true', 'on'] as const;

/** Bounds of an exchange (bytes from rank 0 to every rank through the worker). */
export const EXCHANGE_LIMITS = {
  /** The key, as a regular expression source (JavaScript, Python `re.fullmatch` and a hand check in C++ alike). */
  keyPattern: '^[A-Za-z0-9_.-]{1,64}$',
  keyMaxChars: 64,
  /** rank 0's bytes, before base64. */
  maxBytes: 4096,
  /** Exchanges one rank may make in one block attempt; one more is a protocol fault. */
  maxPerAttempt: 16,
  /** The key nccl_unique_id() exchanges under. */
  ncclKey: 'nccl-id',
} as const;

/** The host phase (a rank's start before its lease, no device visible). */
export const HOST_PHASE = {
  /** `1` in the rank's environment: run prepare(), say `prepared`, wait for `open`. */
  env: 'ORCH_HOST_PHASE',
  /** The environment variable `open`'s `devices` is written to before setup(). */
  devicesEnv: 'CUDA_VISIBLE_DEVICES',
  touchedCudaCode: 'PREPARE_TOUCHED_CUDA',
} as const;

/**
 * orch's CUPTI injection library (native/inject/orch_inject.h): its ABI version and the fields of
 * the structs a rank library reads through dlsym, in order (each a uint64 unless typed otherwise).
 */
export const INJECT_ABI = {
  version: 1,
  library: 'liborch_inject.so',
  pathEnv: 'CUDA_INJECTION64_PATH',
  traceEnv: 'ORCH_INJECT_TRACE',
  reportEnv: 'ORCH_INJECT_REPORT',
  stepRangeEnv: 'ORCH_INJECT_STEP_RANGE',
  /** How orch_inject_pause detaches: finalize (the default), unsubscribe, never (refused). */
  pauseEnv: 'ORCH_INJECT_PAUSE',
  countsFields: ['abi', 'initialized', 'kernels', 'captured', 'graphs', 'memcpy', 'memset', 'syncs'],
  symbols: [
    'orch_inject_read',
    'orch_inject_status',
    'orch_inject_clocks',
    'orch_inject_reason_name',
    'orch_inject_ecc',
    'orch_inject_tracing',
    'orch_inject_timestamp',
    'orch_inject_kernels',
    'orch_inject_graphs',
    'orch_inject_pause',
    'orch_inject_resume',
  ],
} as const;

/** Whether a toggle's value reads as on (TOGGLE_ON_STRINGS); absent is off. */
export function toggleIsOn(value: boolean | string | undefined): boolean {
  return value === true || (typeof value === 'string' && isOneOf(TOGGLE_ON_STRINGS, value));
}
