/* protocol_generated.h: the rank protocol's constants for native/, generated from jobs/rank-protocol-constants.ts by `npm run gen:protocol`; do not edit. */
#ifndef GRAPHRT_PROTOCOL_GENERATED_H
#define GRAPHRT_PROTOCOL_GENERATED_H

#define GRAPHRT_PROTOCOL_VERSION 1
#define GRAPHRT_LINE_MAX_BYTES 1048576 /* a line's bytes, its newline not counted */
#define ORCH_INJECT_ABI_VERSION 1
#define GRAPHRT_EXIT_INTERNAL 1
#define GRAPHRT_EXIT_BAD_FLAG 2
#define GRAPHRT_EXIT_BAD_REQUEST 2
#define GRAPHRT_EXIT_UNKNOWN_WORKLOAD 2
#define GRAPHRT_EXIT_UNKNOWN_TOGGLE 2
#define GRAPHRT_EXIT_BAD_PARAM 2
#define GRAPHRT_EXIT_BACKEND_UNAVAILABLE 3
#define GRAPHRT_EXIT_CARD_BUSY 4
#define GRAPHRT_EXIT_GATE_FAILED 5
#define GRAPHRT_EXIT_CUDA_ERROR 6
#define GRAPHRT_EXIT_RANK_LOST 7
#define GRAPHRT_TOGGLE_COUNT 8
#define GRAPHRT_TOGGLE_NAMES_INIT {"graph", "pdl", "overlap", "split_combine", "pin", "freeze_pointer", "lazy_init", "allreduce"}

#endif
