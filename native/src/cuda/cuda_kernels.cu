// The CUDA side of the kernel table: one __global__ wrapper per kernel body (kernels/*.hpp).
//
// Every wrapper starts with the PDL calls, before any global read or write of the body:
// - cudaTriggerProgrammaticLaunchCompletion() first (PdlTrigger::Early, the default; Implicit
//   leaves it out, so the dependent launches only as this grid's blocks exit, for the benchmark's
//   comparison): under PDL the next kernel in the stream may
//   be scheduled as soon as every block of this one has started, so its launch latency hides
//   behind this kernel's execution instead of following it. That is safe because the trigger only
//   lets the dependent *launch*: its cudaGridDependencySynchronize() still waits for this grid to
//   complete and its writes to be visible (the trigger carries no memory guarantee, and none is
//   needed since no body writes before its own wait). A dependent's blocks that launch early can
//   hold SM slots while they wait, but only after all of this grid's blocks are resident, so it
//   cannot starve this grid.
// - cudaGridDependencySynchronize(): waits for the preceding kernel in the stream (transitively,
//   all earlier work). Without the PDL launch attribute both calls are no-ops, so the same binary
//   runs the pdl=off arm.
#include <cuda_runtime.h>

#include "cuda_kernels.hpp"

namespace graphrt::cuda {
namespace {

__device__ __forceinline__ Dim3 dim3_of(const uint3 v) { return Dim3{v.x, v.y, v.z}; }
__device__ __forceinline__ Dim3 dim3_of(const dim3 v) { return Dim3{v.x, v.y, v.z}; }

template <class K, bool kEarlyTrigger>
__global__ void kernel(const typename K::Args args) {
  if constexpr (kEarlyTrigger) cudaTriggerProgrammaticLaunchCompletion();
  cudaGridDependencySynchronize();
  ThreadCtx t;
  t.block_idx = dim3_of(blockIdx);
  t.thread_idx = dim3_of(threadIdx);
  t.grid_dim = dim3_of(gridDim);
  t.block_dim = dim3_of(blockDim);
  K::body(t, args);
}

const void* const kFunctions[2][kKernelCount] = {
#define GRAPHRT_CUDA_FN_IMPLICIT(id, type, name) reinterpret_cast<const void*>(&kernel<type, false>),
#define GRAPHRT_CUDA_FN_EARLY(id, type, name) reinterpret_cast<const void*>(&kernel<type, true>),
    {GRAPHRT_KERNEL_LIST(GRAPHRT_CUDA_FN_IMPLICIT)},
    {GRAPHRT_KERNEL_LIST(GRAPHRT_CUDA_FN_EARLY)},
#undef GRAPHRT_CUDA_FN_EARLY
#undef GRAPHRT_CUDA_FN_IMPLICIT
};

}  // namespace

const void* kernel_function(KernelId id, PdlTrigger trigger) noexcept {
  return kFunctions[trigger == PdlTrigger::Early ? 1 : 0][static_cast<std::size_t>(id)];
}

}  // namespace graphrt::cuda
