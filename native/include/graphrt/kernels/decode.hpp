// decode: the kernels of one decode step. Every body writes each output element from exactly one
// thread, which loops over its inputs in a fixed order: results are deterministic and a kernel
// split over disjoint output ranges (split_combine) is bit-identical to the single launch.
//
// The position lives in device memory (`pos`); the KV row written and the attention loop bound
// are derived from it on the device, and AdvancePos moves it inside the step. The only way a
// host value reaches a launch is as a kernel argument, which capture freezes: KvWrite's
// `k_row_frozen`/`v_row_frozen` (the freeze_pointer test toggle) is exactly that bug.
#pragma once

#include <math.h>

#include "graphrt/hd.hpp"

namespace graphrt::kernels {

// x[i] = 0.5 * out[i] + emb[pos][i]: the next token's input from the last output.
struct EmbedKernel {
  struct Args {
    const float* out;
    const float* emb;  // [max_pos][n]
    const std::uint32_t* pos;
    float* x;
    std::uint32_t n;
  };
  RT_HD static void body(const ThreadCtx& t, const Args& k) {
    const std::uint32_t i = t.global_x();
    if (i >= k.n) return;
    k.x[i] = 0.5f * k.out[i] + k.emb[static_cast<std::size_t>(*k.pos) * k.n + i];
  }
};

// y[i] = x[i] * g[i] / sqrt(mean(x^2) + eps); each thread sums the squares itself, in order.
struct RmsNormKernel {
  struct Args {
    const float* x;
    const float* g;
    float* y;
    std::uint32_t n;
  };
  RT_HD static void body(const ThreadCtx& t, const Args& k) {
    const std::uint32_t i = t.global_x();
    if (i >= k.n) return;
    float ss = 0.0f;
    for (std::uint32_t j = 0; j < k.n; ++j) ss += k.x[j] * k.x[j];
    k.y[i] = k.x[i] * k.g[i] / sqrtf(ss / static_cast<float>(k.n) + 1e-6f);
  }
};

// y[i] = act(sum_j w[j][i] * x[j]) + (residual ? residual[i] : 0), act = relu when `relu`.
// `residual` may alias `y` (each element is read and written by the same thread only).
// w is stored column-major ([cols][rows]): at every j the threads of a warp (consecutive i) read
// consecutive floats, one coalesced load per warp, where the row-major [rows][cols] layout had
// each warp's load strided by `cols` floats (20.8 us at hidden 256 on the H200, BENCHMARKS.md).
// The sum still runs j = 0..cols-1 in order (unrolling does not reorder it), so it is the same
// deterministic result on every launch, eager or replayed.
struct MatvecKernel {
  struct Args {
    const float* w;  // [cols][rows]: element (i, j) at w[j * rows + i]
    const float* x;  // [cols]
    const float* residual;
    float* y;  // [rows]
    std::uint32_t rows;
    std::uint32_t cols;
    std::uint32_t relu;
  };
  RT_HD static void body(const ThreadCtx& t, const Args& k) {
    const std::uint32_t i = t.global_x();
    if (i >= k.rows) return;
    const float* col = k.w + i;
    float acc = 0.0f;
#if defined(__CUDACC__)
#pragma unroll 16  // loads in flight per thread: one warp load is one 128-byte line now
#endif
    for (std::uint32_t j = 0; j < k.cols; ++j) acc += col[static_cast<std::size_t>(j) * k.rows] * k.x[j];
    if (k.relu != 0 && acc < 0.0f) acc = 0.0f;
    k.y[i] = k.residual != nullptr ? k.residual[i] + acc : acc;
  }
};

// Writes kv[0..n) into K-cache row *pos and kv[n..2n) into V-cache row *pos. With the
// freeze_pointer toggle the host passes the row addresses it computed (non-null) and they win.
struct KvWriteKernel {
  struct Args {
    const float* kv;  // [2n]: k then v
    const std::uint32_t* pos;
    float* k_cache;  // [max_pos][n]
    float* v_cache;
    float* k_row_frozen;
    float* v_row_frozen;
    std::uint32_t n;
  };
  RT_HD static void body(const ThreadCtx& t, const Args& k) {
    const std::uint32_t i = t.global_x();
    if (i >= k.n) return;
    const std::size_t row = static_cast<std::size_t>(*k.pos) * k.n;
    float* kr = k.k_row_frozen != nullptr ? k.k_row_frozen : k.k_cache + row;
    float* vr = k.v_row_frozen != nullptr ? k.v_row_frozen : k.v_cache + row;
    kr[i] = k.kv[i];
    vr[i] = k.kv[k.n + i];
  }
};

// scores[j] = scale * dot(q, K[j]) for j <= *pos (the loop bound is read on the device).
struct AttnScoresKernel {
  struct Args {
    const float* q;
    const float* k_cache;
    const std::uint32_t* pos;
    float* scores;  // [max_pos]
    std::uint32_t n;
    std::uint32_t max_pos;
    float scale;
  };
  RT_HD static void body(const ThreadCtx& t, const Args& k) {
    const std::uint32_t j = t.global_x();
    if (j >= k.max_pos || j > *k.pos) return;
    const float* kr = k.k_cache + static_cast<std::size_t>(j) * k.n;
    float acc = 0.0f;
    for (std::uint32_t d = 0; d < k.n; ++d) acc += k.q[d] * kr[d];
    k.scores[j] = k.scale * acc;
  }
};

// att[i] = sum_{j<=pos} softmax(scores)_j * V[j][i], for i in [begin, end). Each thread computes
// the max and the denominator itself in the same order, so the output does not depend on how
// [0, n) is split into launches: split_combine launches [0, n/2) and [n/2, n) separately.
struct AttnCombineKernel {
  struct Args {
    const float* scores;
    const float* v_cache;
    const std::uint32_t* pos;
    float* att;
    std::uint32_t n;
    std::uint32_t begin;
    std::uint32_t end;
  };
  RT_HD static void body(const ThreadCtx& t, const Args& k) {
    const std::uint32_t i = k.begin + t.global_x();
    if (i >= k.end) return;
    const std::uint32_t len = *k.pos + 1;
    float m = k.scores[0];
    for (std::uint32_t j = 1; j < len; ++j) m = fmaxf(m, k.scores[j]);
    float den = 0.0f;
    float acc = 0.0f;
    for (std::uint32_t j = 0; j < len; ++j) {
      const float e = expf(k.scores[j] - m);
      den += e;
      acc += e * k.v_cache[static_cast<std::size_t>(j) * k.n + i];
    }
    k.att[i] = acc / den;
  }
};

// x[i] += b[i]: the filler kernels that bring a layer to kernels_per_layer launches.
struct BiasKernel {
  struct Args {
    float* x;
    const float* b;
    std::uint32_t n;
  };
  RT_HD static void body(const ThreadCtx& t, const Args& k) {
    const std::uint32_t i = t.global_x();
    if (i < k.n) k.x[i] = k.x[i] + k.b[i];
  }
};

// *pos = (*pos + 1) % max_pos, by one thread: the line that makes a replay a different token.
struct AdvancePosKernel {
  struct Args {
    std::uint32_t* pos;
    std::uint32_t max_pos;
  };
  RT_HD static void body(const ThreadCtx& t, const Args& k) {
    if (t.global_x() == 0) *k.pos = (*k.pos + 1) % k.max_pos;
  }
};

}  // namespace graphrt::kernels
