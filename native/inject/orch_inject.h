/* orch_inject.h: the C ABI of liborch_inject.so, orch's CUPTI injection library (ranklib/PROTOCOL.md
 * "Launch counts and clocks"). The CUDA driver loads the library at cuInit when
 * CUDA_INJECTION64_PATH names it and calls InitializeInjection; from then on it counts driver calls
 * of the unmodified program through CUPTI callbacks (never activity tracing). A rank library finds
 * it with dlopen(path, RTLD_NOW | RTLD_NOLOAD) and dlsym; ranklib/cpp/orch_rank.h mirrors these
 * structs, so a change here bumps ORCH_INJECT_ABI. */
#ifndef ORCH_INJECT_H
#define ORCH_INJECT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ORCH_INJECT_ABI 1

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

/* Why the library counts or does not, as a sentence: "counting", "CUPTI subscribe failed: ...",
 * "never initialized: ...". The pointer stays valid for the life of the process. */
const char* orch_inject_status(void);

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

/* The name of clock-event reason bit `bit` (the mask 1 << bit) as graphrt names it ("gpu_idle",
 * "sw_power_cap", ...), or NULL for a bit without a name. */
const char* orch_inject_reason_name(unsigned bit);

/* Called by the CUDA driver at cuInit, once per process however often it is called; returns 1 as
 * CUPTI's injection samples do. Subscribing fails where another CUPTI subscriber is there first. */
int InitializeInjection(void);

#ifdef __cplusplus
}
#endif

#endif /* ORCH_INJECT_H */
