// KernelId -> the __global__ wrapper of its body (cuda_kernels.cu), for cudaLaunchKernelExC.
#pragma once

#include "graphrt/kernels.hpp"

namespace graphrt::cuda {

// Where a kernel lets its PDL dependent launch (cudaTriggerProgrammaticLaunchCompletion):
// AfterWait = right after its own cudaGridDependencySynchronize() (the backend's default);
// Early = before it; Implicit = no explicit trigger (the dependent launches as this grid's blocks
// exit). All three are correct (cuda_kernels.cu says why); they differ only in speed.
enum class PdlTrigger { Early, AfterWait, Implicit };

// The device function of kernel `id`; its one parameter is the id's Args struct, by value.
const void* kernel_function(KernelId id, PdlTrigger trigger) noexcept;

}  // namespace graphrt::cuda
