// The device time of a rep's kernels, as orch's CUPTI injection library traced them (native/inject,
// orch_inject.h "Trace mode"). graphrt links no CUPTI: when the CUDA driver loaded the library
// (CUDA_INJECTION64_PATH) and it traces (ORCH_INJECT_TRACE=1), graphrt finds it already in the
// process (dlopen RTLD_NOLOAD) and takes its kernel records, as a rank library does. The trace
// probe's chain (worker/command/chain-floor.ts) runs one traced rep so that the graph-node floor's
// per-node cost can be split into the chain kernels' busy time and what a graph adds per node
// (orchestrator/stats/graph-node-floor.ts): a user's traced busy time already holds the first.
#pragma once

#include <optional>

namespace graphrt {

class KernelTrace {
 public:
  // Finds the library; off (every call a no-op) when it is not loaded or not tracing.
  KernelTrace();
  bool on() const { return take_ != nullptr; }
  // Drops the records so far (capture, settle): the median is of what runs after.
  void drain();
  // Device busy time per kernel since drain(), ns: the union of the traced kernels' intervals (the
  // trace probe's busy, orchestrator/stats/kernel-trace.ts) over their count; none when off or
  // empty. Not the median duration: on the H200 a traced chain kernel's own start-to-end (0.99 µs)
  // exceeded the untraced per-node time of its graph (0.91 µs): consecutive kernels' intervals
  // overlap, so durations do not add up to the time they keep the card busy.
  std::optional<double> busy_ns_per_kernel();

 private:
  // orch_inject_kernels of the loaded library (its type is orch_inject.h's)
  void* take_ = nullptr;
};

}  // namespace graphrt
