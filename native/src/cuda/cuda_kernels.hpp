// KernelId -> the __global__ wrapper of its body (cuda_kernels.cu), for cudaLaunchKernelExC.
#pragma once

#include "graphrt/kernels.hpp"

namespace graphrt::cuda {

// When a kernel lets its PDL dependent launch: Early = cudaTriggerProgrammaticLaunchCompletion()
// at its start (the default); Implicit = when its blocks exit (no explicit trigger).
enum class PdlTrigger { Early, Implicit };

// The device function of kernel `id`; its one parameter is the id's Args struct, by value.
const void* kernel_function(KernelId id, PdlTrigger trigger) noexcept;

}  // namespace graphrt::cuda
