// KernelId -> the CPU implementation of its body: every block x thread of the grid, in order.
#pragma once

#include "cpu_device.hpp"

namespace graphrt::cpu {

template <class K>
void run_grid(Dim3 grid, Dim3 block, const void* args) {
  const auto& a = *static_cast<const typename K::Args*>(args);
  ThreadCtx t;
  t.grid_dim = grid;
  t.block_dim = block;
  for (std::uint32_t bz = 0; bz < grid.z; ++bz)
    for (std::uint32_t by = 0; by < grid.y; ++by)
      for (std::uint32_t bx = 0; bx < grid.x; ++bx)
        for (std::uint32_t tz = 0; tz < block.z; ++tz)
          for (std::uint32_t ty = 0; ty < block.y; ++ty)
            for (std::uint32_t tx = 0; tx < block.x; ++tx) {
              t.block_idx = {bx, by, bz};
              t.thread_idx = {tx, ty, tz};
              K::body(t, a);
            }
}

inline constexpr GridFn kGridFns[kKernelCount] = {
#define GRAPHRT_CPU_GRID(id, type, name) &run_grid<type>,
    GRAPHRT_KERNEL_LIST(GRAPHRT_CPU_GRID)
#undef GRAPHRT_CPU_GRID
};

#define GRAPHRT_CPU_ARGS_FIT(id, type, name) \
  static_assert(sizeof(type::Args) <= kMaxArgsBytes, name " args exceed the CPU launch slot");
GRAPHRT_KERNEL_LIST(GRAPHRT_CPU_ARGS_FIT)
#undef GRAPHRT_CPU_ARGS_FIT

}  // namespace graphrt::cpu
