// NVTX ranges as step delimiters for liborch_inject.so (orch_inject.h "NVTX step ranges", ranklib/PROTOCOL.md "A per_rep program"): a
// per_rep program without a rank library marks its steps with an NVTX range; NVTX loads the
// library named in NVTX_INJECTION64_PATH at the program's first NVTX call and calls
// InitializeInjectionNvtx2, and from then on the range named in ORCH_INJECT_STEP_RANGE delimits
// the launch counts the CUPTI side makes: one step per push/pop (or start/end) of that range.
#pragma once

#include <cstdint>
#include <string>

namespace orch_inject {

// The counters of orch_inject.cpp at one moment (all zeros while CUPTI is not counting).
struct Counts {
  std::uint64_t kernels = 0, captured = 0, graphs = 0, memcpy = 0, memset = 0, syncs = 0;
};

// Defined in orch_inject.cpp: the counters now.
Counts counts_now();

// Defined in orch_inject.cpp: `s` with '"' and '\\' escaped and control characters dropped.
std::string json_escaped(const char* s);

// The exit report's NVTX fields, each preceded by a comma ("" when ORCH_INJECT_STEP_RANGE is unset):
// ,"step_range":"<name>","nvtx":0|1,"range_steps":N,"range_dropped":N,"range_counts":{...},"range_ns":[...],"other_ranges":[...]
// (range_ns: each step's host time, push to pop: the one thing a step shows where CUDA is not counting)
std::string nvtx_report_fields();

}  // namespace orch_inject
