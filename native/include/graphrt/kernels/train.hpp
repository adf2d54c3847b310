// train: per parameter, a forward, a gradient, and an out-of-place SGD update into a new buffer
// (the hazard: the parameter's address moves), plus the pin's copy into the master buffer.
#pragma once

#include "graphrt/hd.hpp"

namespace graphrt::kernels {

// y[i] = param[i] * x[i]
struct TrainForwardKernel {
  struct Args {
    const float* param;
    const float* x;
    float* y;
    std::uint32_t n;
  };
  RT_HD static void body(const ThreadCtx& t, const Args& k) {
    const std::uint32_t i = t.global_x();
    if (i < k.n) k.y[i] = k.param[i] * k.x[i];
  }
};

// grad[i] = (y[i] - target[i]) * x[i]: d/dparam of 0.5 * (param * x - target)^2
struct TrainGradKernel {
  struct Args {
    const float* y;
    const float* x;
    const float* target;
    float* grad;
    std::uint32_t n;
  };
  RT_HD static void body(const ThreadCtx& t, const Args& k) {
    const std::uint32_t i = t.global_x();
    if (i < k.n) k.grad[i] = (k.y[i] - k.target[i]) * k.x[i];
  }
};

// out[i] = param[i] - lr * grad[i]; `out` is a different buffer from `param` (out of place).
struct SgdUpdateKernel {
  struct Args {
    const float* param;
    const float* grad;
    float* out;
    float lr;
    std::uint32_t n;
  };
  RT_HD static void body(const ThreadCtx& t, const Args& k) {
    const std::uint32_t i = t.global_x();
    if (i < k.n) k.out[i] = k.param[i] - k.lr * k.grad[i];
  }
};

// dst[i] = src[i]: the pin (one per parameter per step), a launch so its price is counted.
struct CopyKernel {
  struct Args {
    const float* src;
    float* dst;
    std::uint32_t n;
  };
  RT_HD static void body(const ThreadCtx& t, const Args& k) {
    const std::uint32_t i = t.global_x();
    if (i < k.n) k.dst[i] = k.src[i];
  }
};

}  // namespace graphrt::kernels
