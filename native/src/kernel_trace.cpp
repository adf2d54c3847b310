#include "kernel_trace.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
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

std::optional<double> KernelTrace::median_kernel_ns() {
  if (!on()) return std::nullopt;
  std::vector<orch_inject_kernel> batch(kBatch);
  std::vector<double> ns;
  for (;;) {
    const std::size_t n = take(take_, batch);
    for (std::size_t i = 0; i < n; ++i)
      if (batch[i].end_ns > batch[i].start_ns) ns.push_back(static_cast<double>(batch[i].end_ns - batch[i].start_ns));
    if (n < batch.size()) break;
  }
  if (ns.empty()) return std::nullopt;
  const std::size_t mid = ns.size() / 2;
  std::nth_element(ns.begin(), ns.begin() + static_cast<std::ptrdiff_t>(mid), ns.end());
  double m = ns[mid];
  if (ns.size() % 2 == 0) m = (m + *std::max_element(ns.begin(), ns.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
  return m;
}

}  // namespace graphrt
