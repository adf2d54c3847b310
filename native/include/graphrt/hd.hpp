// Shared by g++ (the CPU backend) and nvcc (the CUDA backend): the host/device qualifier and the
// per-thread context a kernel body sees. Kernel bodies (kernels/*.hpp) depend on nothing else.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define RT_HD __host__ __device__
#else
#define RT_HD
#endif

namespace graphrt {

struct Dim3 {
  std::uint32_t x = 1, y = 1, z = 1;
};

// What a kernel body knows about itself: the CUDA built-ins, as plain values. The CPU backend
// fills one per (block, thread); the CUDA backend builds it from blockIdx/threadIdx/gridDim/blockDim.
struct ThreadCtx {
  Dim3 block_idx;
  Dim3 thread_idx;
  Dim3 grid_dim;
  Dim3 block_dim;

  // The flat x index of this thread over the whole grid.
  RT_HD std::uint32_t global_x() const { return block_idx.x * block_dim.x + thread_idx.x; }
};

}  // namespace graphrt
