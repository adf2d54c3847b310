#include "kernel_trace.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

#include "../inject/orch_inject.h"

namespace graphrt {
namespace {

// Records taken per call: the chain's traced rep launches a few thousand kernels.
constexpr std::size_t kBatch = 4096;
using Take = decltype(&orch_inject_kernels);

std::size_t take(void* fn, std::vector<orch_inject_kernel>& into) {
  return reinterpret_cast<Take>(fn)(into.data(), into.size(), nullptr);
}

}  // namespace

KernelTrace::KernelTrace() {
  const char* path = std::getenv("CUDA_INJECTION64_PATH");
  if (path == nullptr || *path == '\0') return;
  // RTLD_NOLOAD: only a library the driver already loaded at cuInit; never load one here
  void* lib = ::dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return;
  auto tracing = reinterpret_cast<int (*)()>(::dlsym(lib, "orch_inject_tracing"));
  void* take = ::dlsym(lib, "orch_inject_kernels");
  // the handle stays open: the driver holds the library for the life of the process anyway
  if (tracing != nullptr && take != nullptr && tracing() == 1) take_ = take;
}

void KernelTrace::drain() {
  if (!on()) return;
  std::vector<orch_inject_kernel> batch(kBatch);
  while (take(take_, batch) == batch.size()) {
  }
}

std::optional<double> KernelTrace::busy_ns_per_kernel() {
  if (!on()) return std::nullopt;
  std::vector<orch_inject_kernel> batch(kBatch);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  for (;;) {
    const std::size_t n = take(take_, batch);
    for (std::size_t i = 0; i < n; ++i)
      if (batch[i].end_ns > batch[i].start_ns) spans.emplace_back(batch[i].start_ns, batch[i].end_ns);
    if (n < batch.size()) break;
  }
  if (spans.empty()) return std::nullopt;
  std::sort(spans.begin(), spans.end());
  std::uint64_t busy = 0;
  std::uint64_t open_start = spans.front().first;
  std::uint64_t open_end = spans.front().second;
  for (const auto& [start, end] : spans) {
    if (start > open_end) {
      busy += open_end - open_start;
      open_start = start;
      open_end = end;
    } else {
      open_end = std::max(open_end, end);
    }
  }
  busy += open_end - open_start;
  return static_cast<double>(busy) / static_cast<double>(spans.size());
}

}  // namespace graphrt
