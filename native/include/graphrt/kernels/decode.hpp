// decode: the kernels of one decode step. Every output element is written by exactly one thread
// and every sum runs in one fixed order, so results are deterministic, launch after launch, eager
// or replayed. The dot products (MatvecKernel, AttnScoresKernel) take one warp per output: lane l
// sums its 4-float chunks l, l + 32, ... in order, then the warp adds the 32 partials in one fixed
// butterfly (warp_dot). On the CPU backend lane 0 of each warp computes the same 32 partials and
// the same butterfly, so both backends make the same sums in the same order (the bytes can still
// differ between backends where a math function does: expf in the attention kernels).
//
// The position lives in device memory (`pos`); the KV row written and the attention loop bound
// are derived from it on the device, and AdvancePos moves it inside the step. The only way a
// host value reaches a launch is as a kernel argument, which capture freezes: KvWrite's
// `k_row_frozen`/`v_row_frozen` (the freeze_pointer test toggle) is exactly that bug.
#pragma once

#include <math.h>

#include "graphrt/hd.hpp"

namespace graphrt::kernels {

inline constexpr std::uint32_t kWarp = 32;

// One lane's partial of dot(a, x) over n floats: chunks c = lane, lane + 32, ... of 4 floats
// (j in [4c, 4c + 4), j < n), fused multiply-adds in that order. On the GPU a 16-byte load per
// chunk when n is a multiple of 4 and both rows are 16-byte aligned; the same sums either way.
RT_HD inline float lane_partial(const float* a, const float* x, std::uint32_t n, std::uint32_t lane) {
  float acc = 0.0f;
#if defined(__CUDA_ARCH__)
  if ((n & 3u) == 0 && (reinterpret_cast<std::uintptr_t>(a) & 15u) == 0 &&
      (reinterpret_cast<std::uintptr_t>(x) & 15u) == 0) {
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* x4 = reinterpret_cast<const float4*>(x);
#pragma unroll 4
    for (std::uint32_t c = lane; c < n / 4; c += kWarp) {
      const float4 w = __ldg(a4 + c);
      const float4 v = __ldg(x4 + c);
      acc = fmaf(w.x, v.x, acc);
      acc = fmaf(w.y, v.y, acc);
      acc = fmaf(w.z, v.z, acc);
      acc = fmaf(w.w, v.w, acc);
    }
    return acc;
  }
#endif
  for (std::uint32_t c = lane; 4 * c < n; c += kWarp)
    for (std::uint32_t j = 4 * c; j < 4 * c + 4 && j < n; ++j) acc = fmaf(a[j], x[j], acc);
  return acc;
}

// dot(a, x) by the warp of `lane`, every lane of which must call it (the whole warp takes the same
// branch: one warp per output). The 32 partials are added in a fixed xor butterfly (offsets 16, 8,
// 4, 2, 1); float addition is commutative, so every lane ends with the same bits. The CPU backend
// runs threads one by one: there lane 0 makes all 32 partials and the same butterfly, the other
// lanes return 0 (their result is not used).
RT_HD inline float warp_dot(const float* a, const float* x, std::uint32_t n, std::uint32_t lane) {
#if defined(__CUDA_ARCH__)
  float v = lane_partial(a, x, n, lane);
  for (std::uint32_t off = kWarp / 2; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
#else
  if (lane != 0) return 0.0f;
  float v[kWarp], next[kWarp];
  for (std::uint32_t l = 0; l < kWarp; ++l) v[l] = lane_partial(a, x, n, l);
  for (std::uint32_t off = kWarp / 2; off > 0; off /= 2) {
    for (std::uint32_t l = 0; l < kWarp; ++l) next[l] = v[l] + v[l ^ off];
    for (std::uint32_t l = 0; l < kWarp; ++l) v[l] = next[l];
  }
  return v[0];
#endif
}

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

// y[i] = act(dot(w[i], x)) + (residual ? residual[i] : 0), act = relu when `relu`; one warp per
// row i (launch rows * kWarp threads). w is row-major [rows][cols], so a warp reads its row as
// consecutive 16-byte chunks (coalesced), and rows * 32 threads fill the card where one thread per
// row (16 us at hidden 256 on the H200: 4 blocks, a sequential 256-long loop each) could not.
// `residual` may alias `y` (lane 0 of row i's warp alone reads and writes element i).
struct MatvecKernel {
  struct Args {
    const float* w;  // [rows][cols]
    const float* x;  // [cols]
    const float* residual;
    float* y;  // [rows]
    std::uint32_t rows;
    std::uint32_t cols;
    std::uint32_t relu;
  };
  RT_HD static void body(const ThreadCtx& t, const Args& k) {
    const std::uint32_t i = t.global_x() / kWarp;
    const std::uint32_t lane = t.global_x() % kWarp;
    if (i >= k.rows) return;  // whole warps only: rows * 32 threads in blocks of whole warps
    float acc = warp_dot(k.w + static_cast<std::size_t>(i) * k.cols, k.x, k.cols, lane);
    if (lane != 0) return;
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

// scores[j] = scale * dot(K[j], q) for j <= *pos (the loop bound is read on the device); one
// warp per row j (launch max_pos * kWarp threads): the warp reads K row j contiguously, where one
// thread per row read K strided by n (12.4 us at hidden 256 on the H200).
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
    const std::uint32_t j = t.global_x() / kWarp;
    const std::uint32_t lane = t.global_x() % kWarp;
    if (j >= k.max_pos || j > *k.pos) return;  // uniform over the warp
    const float acc = warp_dot(k.k_cache + static_cast<std::size_t>(j) * k.n, k.q, k.n, lane);
    if (lane == 0) k.scores[j] = k.scale * acc;
  }
};

// Attention over positions 0..len-1 (len = *pos + 1) in chunks of kAttnChunk positions, each
// reduced on its own (flash-decoding style) and the chunks merged in chunk order:
//   chunk c: m_c = max s_j, d_c = sum exp(s_j - m_c), a_c[i] = sum exp(s_j - m_c) * V[j][i]
//   merge:   M = max_c m_c; f_c = exp(m_c - M); att[i] = (sum_c f_c a_c[i]) / (sum_c f_c d_c)
// AttnCombineKernel does it all in one thread per i. split_combine fissions it: AttnPartialKernel
// makes every (chunk, i) on its own thread (chunks x n threads: the reduction over positions
// spread over many blocks instead of n/64), AttnMergeKernel merges the chunks per i. Both run
// attn_chunk and the merge with the same operations in the same order, so the split output is
// bit-identical to the unsplit one on each backend (the chunking is fixed, not the toggle's).
inline constexpr std::uint32_t kAttnChunk = 16;

RT_HD inline std::uint32_t attn_chunks(std::uint32_t len) { return (len + kAttnChunk - 1) / kAttnChunk; }

struct AttnChunk {
  float m, d, a;
};

RT_HD inline AttnChunk attn_chunk(const float* scores, const float* v_cache, std::uint32_t n, std::uint32_t i,
                                  std::uint32_t c, std::uint32_t len) {
  const std::uint32_t j0 = c * kAttnChunk;
  const std::uint32_t j1 = j0 + kAttnChunk < len ? j0 + kAttnChunk : len;
  AttnChunk r{scores[j0], 0.0f, 0.0f};
  for (std::uint32_t j = j0 + 1; j < j1; ++j) r.m = fmaxf(r.m, scores[j]);
  for (std::uint32_t j = j0; j < j1; ++j) {
    const float e = expf(scores[j] - r.m);
    r.d += e;
    r.a = fmaf(e, v_cache[static_cast<std::size_t>(j) * n + i], r.a);
  }
  return r;
}

// One step of the merge, chunk by chunk from c = 0: f = exp(m_c - M), den += f d_c, acc += f a_c.
RT_HD inline void attn_merge(float big_m, const AttnChunk& c, float& den, float& acc) {
  const float f = expf(c.m - big_m);
  den = fmaf(f, c.d, den);
  acc = fmaf(f, c.a, acc);
}

// The max of count floats at p[0], p[stride], ... (exact in any order).
RT_HD inline float max_of(const float* p, std::uint32_t count, std::uint32_t stride) {
  float m = p[0];
  for (std::uint32_t c = 1; c < count; ++c) m = fmaxf(m, p[static_cast<std::size_t>(c) * stride]);
  return m;
}

// The merged attention output of chunks 0..chunks-1, chunk_at(c) giving chunk c, in chunk order.
template <class ChunkAt>
RT_HD inline float attn_merged(float big_m, std::uint32_t chunks, const ChunkAt& chunk_at) {
  float den = 0.0f, acc = 0.0f;
  for (std::uint32_t c = 0; c < chunks; ++c) attn_merge(big_m, chunk_at(c), den, acc);
  return acc / den;
}

// att[i] for i < n, one thread per i: every chunk, then the merge (the unsplit combine).
struct AttnCombineKernel {
  struct Args {
    const float* scores;
    const float* v_cache;
    const std::uint32_t* pos;
    float* att;
    std::uint32_t n;
  };
  RT_HD static void body(const ThreadCtx& t, const Args& k) {
    const std::uint32_t i = t.global_x();
    if (i >= k.n) return;
    const std::uint32_t len = *k.pos + 1;
    k.att[i] = attn_merged(max_of(k.scores, len, 1), attn_chunks(len),
                           [&](std::uint32_t c) { return attn_chunk(k.scores, k.v_cache, k.n, i, c, len); });
  }
};

// split_combine, first half: thread (c, i) = (t / n, t % n) writes chunk c's a_c[i] (and, at i = 0,
// m_c and d_c). Launch attn_chunks(max_pos) * n threads; chunks at or past len do nothing.
struct AttnPartialKernel {
  struct Args {
    const float* scores;
    const float* v_cache;
    const std::uint32_t* pos;
    float* part_a;   // [chunks][n]
    float* part_md;  // [chunks][2]: m_c, d_c
    std::uint32_t n;
    std::uint32_t chunks;  // attn_chunks(max_pos)
  };
  RT_HD static void body(const ThreadCtx& t, const Args& k) {
    const std::uint32_t c = t.global_x() / k.n;
    const std::uint32_t i = t.global_x() % k.n;
    const std::uint32_t len = *k.pos + 1;
    if (c >= k.chunks || c >= attn_chunks(len)) return;
    const AttnChunk r = attn_chunk(k.scores, k.v_cache, k.n, i, c, len);
    k.part_a[static_cast<std::size_t>(c) * k.n + i] = r.a;
    if (i == 0) {
      k.part_md[2 * c] = r.m;
      k.part_md[2 * c + 1] = r.d;
    }
  }
};

// split_combine, second half: att[i] = the merge of chunks 0..attn_chunks(len)-1, one thread per i.
struct AttnMergeKernel {
  struct Args {
    const float* part_a;
    const float* part_md;
    const std::uint32_t* pos;
    float* att;
    std::uint32_t n;
  };
  RT_HD static void body(const ThreadCtx& t, const Args& k) {
    const std::uint32_t i = t.global_x();
    if (i >= k.n) return;
    const std::uint32_t chunks = attn_chunks(*k.pos + 1);
    k.att[i] = attn_merged(max_of(k.part_md, chunks, 2), chunks, [&](std::uint32_t c) {
      return AttnChunk{k.part_md[2 * c], k.part_md[2 * c + 1], k.part_a[static_cast<std::size_t>(c) * k.n + i]};
    });
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
