/**
 * The files generated from the rank protocol's description (jobs/rank-protocol-description.ts),
 * as text: pure, so that scripts/gen-protocol.ts writes them and test/conformance/
 * generated-files.test.ts compares them byte for byte with what is committed.
 */

import {
  EXCHANGE_LIMITS,
  GRAPHRT_EXIT_CODE_TABLE,
  GRAPHRT_TOGGLE_NAMES,
  HOST_PHASE,
  INJECT_ABI,
  ORCH_RANK_PROTOCOL_NAME,
  RANK_LIBRARY_EXIT_CODES,
  RANK_LINE_MAX_BYTES,
  RANK_PROTOCOL_VERSION,
  RANK_REQUESTS_IN_FLIGHT_MAX,
  TOGGLE_ON_STRINGS,
} from './rank-protocol-constants.ts';
import { rankProtocolDescription } from './rank-protocol-description.ts';

const NOTICE = 'generated from jobs/rank-protocol-constants.ts by `npm run gen:protocol`; do not edit';

/** The C++ header's generated section lies between these two lines (both kept). */
export const CPP_SECTION_BEGIN = '// BEGIN GENERATED PROTOCOL CONSTANTS (npm run gen:protocol; do not edit)';
export const CPP_SECTION_END = '// END GENERATED PROTOCOL CONSTANTS';

export const GENERATED_PATHS = {
  json: 'ranklib/protocol.json',
  python: 'ranklib/python/orch_rank/_protocol.py',
  cpp: 'ranklib/cpp/orch_rank.h',
  native: 'native/include/graphrt/protocol_generated.h',
} as const;

export function renderProtocolJson(): string {
  return `${JSON.stringify(rankProtocolDescription(), null, 2)}\n`;
}

const py = (x: unknown): string => JSON.stringify(x);
const cStr = (s: string): string => JSON.stringify(s);

export function renderPython(): string {
  return [
    `"""The rank protocol's constants, ${NOTICE}."""`,
    '',
    `PROTOCOL = ${py(ORCH_RANK_PROTOCOL_NAME)}`,
    `VERSION = ${RANK_PROTOCOL_VERSION}`,
    `LINE_MAX_BYTES = ${RANK_LINE_MAX_BYTES}  # a line's bytes, its "\\n" not counted`,
    `REQUESTS_IN_FLIGHT_MAX = ${RANK_REQUESTS_IN_FLIGHT_MAX}  # written by the worker, not yet answered`,
    `TOGGLE_ON_STRINGS = (${TOGGLE_ON_STRINGS.map(py).join(', ')},)`,
    `EXIT_OK = ${RANK_LIBRARY_EXIT_CODES.OK}`,
    `EXIT_FAILED = ${RANK_LIBRARY_EXIT_CODES.FAILED}`,
    `EXIT_USER_ERROR = ${RANK_LIBRARY_EXIT_CODES.USER_ERROR}`,
    `EXCHANGE_KEY_PATTERN = ${py(EXCHANGE_LIMITS.keyPattern)}`,
    `EXCHANGE_MAX_BYTES = ${EXCHANGE_LIMITS.maxBytes}`,
    `EXCHANGE_MAX_PER_ATTEMPT = ${EXCHANGE_LIMITS.maxPerAttempt}`,
    `EXCHANGE_NCCL_KEY = ${py(EXCHANGE_LIMITS.ncclKey)}`,
    `HOST_PHASE_ENV = ${py(HOST_PHASE.env)}`,
    `HOST_PHASE_DEVICES_ENV = ${py(HOST_PHASE.devicesEnv)}`,
    `PREPARE_TOUCHED_CUDA = ${py(HOST_PHASE.touchedCudaCode)}`,
    `INJECT_ABI = ${INJECT_ABI.version}`,
    `INJECT_COUNTS_FIELDS = (${INJECT_ABI.countsFields.map(py).join(', ')})`,
    '',
  ].join('\n');
}

/** The generated section of ranklib/cpp/orch_rank.h, its marker lines included. */
export function renderCppSection(): string {
  return [
    CPP_SECTION_BEGIN,
    `// ${NOTICE}.`,
    `inline constexpr const char* kProtocol = ${cStr(ORCH_RANK_PROTOCOL_NAME)};`,
    `inline constexpr int kVersion = ${RANK_PROTOCOL_VERSION};`,
    `inline constexpr std::size_t kMaxLineBytes = ${RANK_LINE_MAX_BYTES};  // a line's bytes, its newline not counted`,
    `inline constexpr std::size_t kRequestsInFlightMax = ${RANK_REQUESTS_IN_FLIGHT_MAX};  // written by the worker, not yet answered`,
    `inline constexpr const char* kToggleOnStrings[] = {${TOGGLE_ON_STRINGS.map(cStr).join(', ')}};`,
    `inline constexpr int kExitOk = ${RANK_LIBRARY_EXIT_CODES.OK};`,
    `inline constexpr int kExitFailed = ${RANK_LIBRARY_EXIT_CODES.FAILED};`,
    `inline constexpr int kExitUserError = ${RANK_LIBRARY_EXIT_CODES.USER_ERROR};`,
    `inline constexpr std::size_t kExchangeKeyMaxChars = ${EXCHANGE_LIMITS.keyMaxChars};  // of [A-Za-z0-9_.-]`,
    `inline constexpr std::size_t kExchangeMaxBytes = ${EXCHANGE_LIMITS.maxBytes};`,
    `inline constexpr int kExchangeMaxPerAttempt = ${EXCHANGE_LIMITS.maxPerAttempt};`,
    `inline constexpr const char* kExchangeNcclKey = ${cStr(EXCHANGE_LIMITS.ncclKey)};`,
    `inline constexpr const char* kHostPhaseEnv = ${cStr(HOST_PHASE.env)};`,
    `inline constexpr const char* kHostPhaseDevicesEnv = ${cStr(HOST_PHASE.devicesEnv)};`,
    `inline constexpr const char* kPrepareTouchedCuda = ${cStr(HOST_PHASE.touchedCudaCode)};`,
    `inline constexpr std::uint64_t kInjectAbi = ${INJECT_ABI.version};`,
    CPP_SECTION_END,
  ].join('\n');
}

/** ranklib/cpp/orch_rank.h with its generated section replaced; throws when the markers are missing. */
export function withCppSection(header: string): string {
  const begin = header.indexOf(CPP_SECTION_BEGIN);
  const end = header.indexOf(CPP_SECTION_END);
  if (begin === -1 || end === -1 || end < begin)
    throw new Error(`${GENERATED_PATHS.cpp}: the generated section's marker lines are missing`);
  return header.slice(0, begin) + renderCppSection() + header.slice(end + CPP_SECTION_END.length);
}

/** native/include/graphrt/protocol_generated.h: C (orch_inject) and C++ (graphrt) alike. */
export function renderNativeHeader(): string {
  const exits = Object.entries(GRAPHRT_EXIT_CODE_TABLE).map(([code, n]) => `#define GRAPHRT_EXIT_${code} ${n}`);
  return [
    `/* protocol_generated.h: the rank protocol's constants for native/, ${NOTICE}. */`,
    '#ifndef GRAPHRT_PROTOCOL_GENERATED_H',
    '#define GRAPHRT_PROTOCOL_GENERATED_H',
    '',
    `#define GRAPHRT_PROTOCOL_VERSION ${RANK_PROTOCOL_VERSION}`,
    `#define GRAPHRT_LINE_MAX_BYTES ${RANK_LINE_MAX_BYTES} /* a line's bytes, its newline not counted */`,
    `#define ORCH_INJECT_ABI_VERSION ${INJECT_ABI.version}`,
    ...exits,
    `#define GRAPHRT_TOGGLE_COUNT ${GRAPHRT_TOGGLE_NAMES.length}`,
    `#define GRAPHRT_TOGGLE_NAMES_INIT {${GRAPHRT_TOGGLE_NAMES.map(cStr).join(', ')}}`,
    '',
    '#endif',
    '',
  ].join('\n');
}
