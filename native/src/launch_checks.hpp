// The argument checks every backend's launch() makes before it touches its device: the same
// refusals on the CPU and on CUDA, each named in the backend's own error vocabulary
// (`error_prefix` "" on the CPU backend: "InvalidValue"; "cudaError" on CUDA: "cudaErrorInvalidValue").
#pragma once

#include <cstddef>
#include <string>

#include "graphrt/error.hpp"
#include "graphrt/kernels.hpp"

namespace graphrt {

inline const KernelDesc& checked_kernel(KernelId id, Dim3 grid, Dim3 block, std::size_t args_size,
                                        const std::string& error_prefix) {
  const std::size_t idx = static_cast<std::size_t>(id);
  RT_CHECK(idx < kKernelCount, Errc::InvalidValue, error_prefix + "InvalidDeviceFunction", "kernel id out of range");
  const KernelDesc& desc = kKernelTable[idx];
  RT_CHECK(args_size == desc.args_size, Errc::InvalidValue, error_prefix + "InvalidValue",
           std::string("args size mismatch for kernel ") + desc.name);
  RT_CHECK(grid.x * grid.y * grid.z > 0 && block.x * block.y * block.z > 0, Errc::InvalidValue,
           error_prefix + "InvalidConfiguration", std::string("empty grid for kernel ") + desc.name);
  return desc;
}

}  // namespace graphrt
