// The CUDA side of the kernel table: one __global__ wrapper per kernel body (kernels/*.hpp).
//
// Every wrapper calls cudaGridDependencySynchronize() before any global read or write of the body:
// it waits for the preceding kernel in the stream to complete and its writes to be visible
// (transitively, all earlier work). Without the PDL launch attribute it is a no-op, so the same
// binary runs the pdl=off arm bit for bit.
//
// The trigger (cudaTriggerProgrammaticLaunchCompletion) only lets the next kernel *launch* early
// (its blocks get scheduled and run up to their own wait); it carries no memory guarantee and
// none is needed, because the dependent's wait still waits for this grid's full completion and
// memory flush. So any placement is correct, and each wrapper variant exists (PdlTrigger):
// - AfterWait (default): trigger right after this kernel's own wait. The dependent's launch
//   latency hides behind this kernel's execution, and at most one dependent grid is waiting at a
//   time. Fastest on the H200 for 4-block chains and for decode (BENCHMARKS.md).
// - Early: trigger before the wait. A dependent launched early triggers at once too, so a chain
//   of waiting grids can pile up ahead of the running one; faster only for 1-block chains there.
// - Implicit: no trigger; the dependent launches as this grid's blocks exit.
// A waiting dependent holds SM slots, but only after all of this grid's blocks are resident, so
// it cannot starve this grid.
#include <cuda_runtime.h>

#include "cuda_kernels.hpp"

namespace graphrt::cuda {
namespace {

__device__ __forceinline__ Dim3 dim3_of(const uint3 v) { return Dim3{v.x, v.y, v.z}; }
__device__ __forceinline__ Dim3 dim3_of(const dim3 v) { return Dim3{v.x, v.y, v.z}; }

template <class K, PdlTrigger kTrigger>
__global__ void kernel(const typename K::Args args) {
  if constexpr (kTrigger == PdlTrigger::Early) cudaTriggerProgrammaticLaunchCompletion();
  cudaGridDependencySynchronize();
  if constexpr (kTrigger == PdlTrigger::AfterWait) cudaTriggerProgrammaticLaunchCompletion();
  ThreadCtx t;
  t.block_idx = dim3_of(blockIdx);
  t.thread_idx = dim3_of(threadIdx);
  t.grid_dim = dim3_of(gridDim);
  t.block_dim = dim3_of(blockDim);
  K::body(t, args);
}

template <PdlTrigger kTrigger>
struct Table {
  const void* fn[kKernelCount];
};
template <PdlTrigger kTrigger>
constexpr Table<kTrigger> table() {
  return {{
#define GRAPHRT_CUDA_FN(id, type, name) reinterpret_cast<const void*>(&kernel<type, kTrigger>),
      GRAPHRT_KERNEL_LIST(GRAPHRT_CUDA_FN)
#undef GRAPHRT_CUDA_FN
  }};
}
const Table<PdlTrigger::Early> kEarly = table<PdlTrigger::Early>();
const Table<PdlTrigger::AfterWait> kAfterWait = table<PdlTrigger::AfterWait>();
const Table<PdlTrigger::Implicit> kImplicit = table<PdlTrigger::Implicit>();

}  // namespace

const void* kernel_function(KernelId id, PdlTrigger trigger) noexcept {
  const auto i = static_cast<std::size_t>(id);
  switch (trigger) {
    case PdlTrigger::AfterWait: return kAfterWait.fn[i];
    case PdlTrigger::Implicit: return kImplicit.fn[i];
    case PdlTrigger::Early: break;
  }
  return kEarly.fn[i];
}

}  // namespace graphrt::cuda
