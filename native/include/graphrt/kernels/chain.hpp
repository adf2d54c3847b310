// chain: the launch-cost probe. One trivial element-wise kernel, launched N times per step with
// different constants, so the order of the launches is visible in the output hash.
#pragma once

#include "graphrt/hd.hpp"

namespace graphrt::kernels {

struct ChainKernel {
  struct Args {
    float* x;
    std::uint32_t n;
    float a;
    float b;
  };
  RT_HD static void body(const ThreadCtx& t, const Args& k) {
    const std::uint32_t i = t.global_x();
    if (i < k.n) k.x[i] = k.x[i] * k.a + k.b;
  }
};

}  // namespace graphrt::kernels
