/* orch_inject.h: the C ABI of liborch_inject.so, orch's CUPTI injection library (ranklib/PROTOCOL.md
 * "Launch counts and clocks"). The CUDA driver loads the library at cuInit when
 * CUDA_INJECTION64_PATH names it and calls InitializeInjection; from then on it counts driver calls
 * of the unmodified program through CUPTI callbacks (never activity tracing). A rank library finds
 * it with dlopen(path, RTLD_NOW | RTLD_NOLOAD) and dlsym; ranklib/cpp/orch_rank.h mirrors these
 * structs, so a change here bumps INJECT_ABI.version in jobs/rank-protocol-constants.ts. */
#ifndef ORCH_INJECT_H
#define ORCH_INJECT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "../include/graphrt/protocol_generated.h"

/* The ABI version, from the rank protocol's description (jobs/rank-protocol-constants.ts INJECT_ABI). */
#define ORCH_INJECT_ABI ORCH_INJECT_ABI_VERSION

/* Counts since InitializeInjection, every thread of the process; a reader takes differences. */
struct orch_inject_counts {
  uint64_t abi;         /* ORCH_INJECT_ABI of the library that filled it */
  uint64_t initialized; /* 1 when InitializeInjection ran and CUPTI callbacks are on; else all counts are 0 */
  uint64_t kernels;     /* cuLaunchKernel(Ex), cuLaunchCooperativeKernel (and _ptsz) on a stream not capturing */
  uint64_t captured;    /* the same launches on a stream that was capturing */
  uint64_t graphs;      /* cuGraphLaunch(_ptsz) */
  uint64_t memcpy;      /* every cuMemcpy* */
  uint64_t memset;      /* every cuMemset* */
  uint64_t syncs;       /* cuCtxSynchronize, cuStreamSynchronize(_ptsz), cuEventSynchronize */
};

/* Fills *out (abi always); 1 when counting, 0 otherwise (orch_inject_status says why). */
int orch_inject_read(struct orch_inject_counts* out);

/* Why the library counts or does not, as a sentence: "counting", "paused: ...", "CUPTI subscribe
 * failed: ...", "never initialized: ...", "counting; the last pause was refused: ...". The pointer
 * stays valid for the life of the process. */
const char* orch_inject_status(void);

/* Pause and resume (new symbols, ABI 1 unchanged: a rank library finds them with dlsym and counts
 * as before where they are absent). A rank library counts a rep's warm-up steps, pauses for its
 * timed steps and resumes at the next rep's start: CUPTI merely subscribed cost a PyTorch graph
 * step ~10 % on the H200, so a pause takes CUPTI off the driver's path. How, by
 * ORCH_INJECT_PAUSE: `finalize` (the default: cuptiFinalize, CUPTI's dynamic detach, at the exit
 * site of a cuCtxSynchronize the library makes on the calling thread), `unsubscribe`
 * (cuptiUnsubscribe alone), `never` (every pause refused). The counts keep their values across a
 * pause (orch_inject_read still answers 1); nothing is counted while paused. Trace mode never
 * pauses, nor a per_rep program's process (ORCH_INJECT_REPORT: its exit line holds the whole
 * process's counts). Each returns 1 on success (pausing a paused or resuming a counting library included),
 * 0 otherwise, with orch_inject_status saying why; a refused pause leaves counting on. */
int orch_inject_pause(void);
int orch_inject_resume(void);

/* NVML's reading of the device of the calling thread's current CUDA context. ok = 0 (and nothing
 * else set) without NVML, a current context or that device in NVML. A value NVML does not give
 * is -1. */
struct orch_inject_clock {
  int ok;
  int sm_mhz;
  int mem_mhz;
  int temp_c;
  double power_w;
  unsigned long long reasons;    /* nvmlDeviceGetCurrentClocksEventReasons bits */
  unsigned long long xid_events; /* XID critical errors NVML reported on the device since its first call
                                    (0 where the device does not report XID events to NVML) */
};

/* Returns ok. */
int orch_inject_clocks(struct orch_inject_clock* out);

/* Volatile uncorrected ECC errors of the current context's device since its last driver reload
 * (nvmlDeviceGetTotalEccErrors); 1 when NVML gave the count, 0 otherwise (no NVML, no ECC). A
 * function of its own so that struct orch_inject_clock, and ABI 1, stay as they are. */
int orch_inject_ecc(unsigned long long* volatile_uncorrected);

/* The name of clock-event reason bit `bit` (the mask 1 << bit) as graphrt names it ("gpu_idle",
 * "sw_power_cap", ...), or NULL for a bit without a name. */
const char* orch_inject_reason_name(unsigned bit);

/* Trace mode, for a `design: probe` of a command workload only (never a timed rep: kernel activity
 * tracing costs +1.35-2.2 us per eager launch, +0.19-0.40 us per graph node on the H200). On when
 * ORCH_INJECT_TRACE=1 is in the environment the driver loads the library in: CUPTI's kernel
 * activity records and each graph instantiation are kept until taken. Times are CUPTI's clock
 * (ns), the one orch_inject_timestamp reads, so a rank library's step markers delimit them, counted
 * from the moment tracing began (CUPTI's own, ns since the epoch, exceed 2^53, the largest integer
 * a JSON number holds exactly; ORCH_INJECT_EPOCH_TIMES=1 gives them as CUPTI does). */
struct orch_inject_kernel {
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t graph_id; /* CUPTI's id of the graph that launched it; 0 for a launch of its own */
  uint32_t stream_id;
};

struct orch_inject_graph {
  uint32_t graph_id; /* cuptiGetGraphId of the graph instantiated */
  uint32_t exec_id;  /* cuptiGetGraphExecId of the executable made (0 when it failed) */
  uint64_t nodes;    /* cuGraphGetNodes' count */
  uint64_t instantiate_ns; /* host time of the cuGraphInstantiate* call */
};

/* 1 when kernel activity is being traced. */
int orch_inject_tracing(void);

/* CUPTI's timestamp now, the kernels' clock: a step's start or end; 0 when not tracing. */
unsigned long long orch_inject_timestamp(void);

/* Flushes CUPTI's buffers, then moves up to `cap` kernel records (oldest first) into `out`;
 * returns how many. *dropped (if not NULL): records lost so far (CUPTI's, or a full store). */
size_t orch_inject_kernels(struct orch_inject_kernel* out, size_t cap, unsigned long long* dropped);

/* Moves up to `cap` instantiations (oldest first) into `out`; returns how many. */
size_t orch_inject_graphs(struct orch_inject_graph* out, size_t cap);

/* NVTX step ranges (orch_nvtx.cpp, ranklib/PROTOCOL.md "A per_rep program"): with
 * NVTX_INJECTION64_PATH naming this library and ORCH_INJECT_STEP_RANGE=<name>, NVTX calls
 * InitializeInjectionNvtx2 (exported, NVTX's entry point) at the program's first NVTX call, and
 * each outermost push..pop or start..end of the range <name> (any domain, ASCII or registered)
 * delimits one step of the counts. */

/* ORCH_INJECT_REPORT=<file> in the environment: at the process's exit (exit handlers, not _exit or
 * a kill) the library appends one JSON line to the file: {"abi","initialized","status","kernels",
 * "captured","graphs","memcpy","memset","syncs"}, the counts since InitializeInjection, for a
 * program orch runs once per rep without a rank library (jobs/per-rep-counts.ts reads it); with a
 * step range, also the steps NVTX delimited (orch_nvtx.hpp nvtx_report_fields). */

/* Called by the CUDA driver at cuInit, once per process however often it is called; returns 1 as
 * CUPTI's injection samples do. Subscribing fails where another CUPTI subscriber is there first. */
int InitializeInjection(void);

#ifdef __cplusplus
}
#endif

#endif /* ORCH_INJECT_H */
