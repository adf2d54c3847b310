// For the cuda_* tests: a Session on the CUDA backend, and the skip rule (exit 77, ctest's
// SKIP_RETURN_CODE) for a CPU-only build or a machine where no GPU is visible.
#pragma once

#include <cstdio>
#include <cstdlib>

#include "harness.hpp"

namespace graphrt::test {

inline void skip_without_gpu(const char* name) {
#if defined(GRAPHRT_WITH_CUDA)
  if (cuda_device_visible()) return;
  std::printf("%s: skipped (no CUDA device visible)\n", name);
#else
  std::printf("%s: skipped (CPU-only build)\n", name);
#endif
  std::exit(77);
}

#if defined(GRAPHRT_WITH_CUDA)
inline Session cuda_session() { return Session(make_cuda_backend()); }
#endif

}  // namespace graphrt::test
