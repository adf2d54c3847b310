// The backend factories. `make_backend` resolves PROTOCOL.md's `--backend auto|cpu|cuda`.
#pragma once

#include <memory>
#include <string>

#include "graphrt/backend.hpp"

namespace graphrt {

std::unique_ptr<Backend> make_cpu_backend();

#if defined(GRAPHRT_WITH_CUDA)
// Implemented in src/cuda/. Throws RtError(BackendUnavailable) when no GPU is visible.
std::unique_ptr<Backend> make_cuda_backend();
// True when the CUDA runtime sees at least one device (never throws).
bool cuda_device_visible() noexcept;
#endif

// "cpu", "cuda" or "auto" (cuda where built and a GPU is visible, else cpu). Throws
// RtError(BackendUnavailable) for cuda in a CPU-only build or with no visible GPU, and
// RtError(BadFlag) for any other name.
std::unique_ptr<Backend> make_backend(const std::string& which);

}  // namespace graphrt
