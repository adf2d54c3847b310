// KernelId -> the __global__ wrapper of its body (cuda_kernels.cu), for cudaLaunchKernelExC.
#pragma once

#include "graphrt/kernels.hpp"

namespace graphrt::cuda {

// The device function of kernel `id`; its one parameter is the id's Args struct, by value.
const void* kernel_function(KernelId id) noexcept;

}  // namespace graphrt::cuda
