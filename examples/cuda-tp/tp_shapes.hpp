// The tensor-parallel decode step's shapes and weights, shared by the CPU build (tp_cpu.cpp) and
// the CUDA build (tp.cu): `layers` MLP blocks over a `hidden` vector, each a column-parallel
// linear (ffn/world rows of W1 on each rank), ReLU, a row-parallel linear (ffn/world columns of W2)
// and one all-reduce of the partial sums, added to the residual. Every rank draws the full seeded
// matrices and keeps its shard, so a rank's weights do not depend on how many ranks there are.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "orch_rank.h"

namespace cuda_tp {

inline constexpr int kVocab = 64;

struct Shapes {
  int layers = 4;
  int hidden = 256;
  int ffn = 1024;
  int rank = 0;
  int world = 1;
  int shard() const { return ffn / world; }
};

inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v == nullptr || *v == '\0' ? fallback : std::stoi(v);
}

// workload.params and the gang's RANK/WORLD_SIZE (torchrun's names, which the worker sets).
inline Shapes shapes_from(const orch_rank::Params& p) {
  Shapes s;
  s.layers = static_cast<int>(p.get_int("layers", s.layers));
  s.hidden = static_cast<int>(p.get_int("hidden", s.hidden));
  s.ffn = static_cast<int>(p.get_int("ffn", s.ffn));
  s.rank = env_int("RANK", 0);
  s.world = env_int("WORLD_SIZE", 1);
  if (s.layers < 1 || s.hidden < 1 || s.world < 1 || s.ffn < s.world || s.ffn % s.world != 0)
    throw std::invalid_argument("params: layers, hidden >= 1 and ffn a multiple of the gang's size (" +
                                std::to_string(s.world) + " ranks), please");
  return s;
}

// The rank STALE_INPUT acts on: rank 1, or rank 0 in a gang of one (as examples/torch-tp's), so
// that the planted bug is caught on one GPU too.
inline int stale_rank(int world) { return world > 1 ? 1 : 0; }

// The host-staged inputs of step k (since reset): the token it embeds and the position that
// scales the head. Both repeat every kVocab steps (7 is prime to kVocab), so the CUDA build keeps
// them in one pinned table that no step rewrites.
inline int token_at(std::uint64_t seed, long long step) {
  return static_cast<int>((seed + 7 * static_cast<std::uint64_t>(step)) % kVocab);
}
inline int position_at(long long step) { return static_cast<int>(step % kVocab); }

// splitmix64: a seeded stream of uniform numbers in [-1, 1).
struct Random {
  std::uint64_t state;
  float next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return static_cast<float>(z >> 40) / static_cast<float>(1 << 23) - 1.0f;
  }
};

// This rank's weights, row-major: embed (kVocab x hidden), then per layer W1's rows
// [rank*shard, (rank+1)*shard) (shard x hidden) and W2's columns of the same range (hidden x shard),
// then the head's rows of that range (shard x hidden): a column-parallel head whose outputs stay on
// their rank, as a vocabulary-parallel logits shard does.
struct Weights {
  std::vector<float> embed;
  std::vector<std::vector<float>> w1, w2;
  std::vector<float> head;
};

inline Weights make_weights(const Shapes& s) {
  Random rng{0x7a11ULL};
  const auto h = static_cast<std::size_t>(s.hidden), f = static_cast<std::size_t>(s.ffn);
  const auto k = static_cast<std::size_t>(s.shard()), first = static_cast<std::size_t>(s.rank) * k;
  Weights w;
  w.embed.resize(kVocab * h);
  for (float& v : w.embed) v = rng.next();
  for (int l = 0; l < s.layers; ++l) {
    std::vector<float> w1(k * h), w2(h * k);
    const float s1 = 1.0f / std::sqrt(static_cast<float>(h)), s2 = 1.0f / std::sqrt(static_cast<float>(f));
    for (std::size_t r = 0; r < f; ++r)
      for (std::size_t c = 0; c < h; ++c) {
        const float v = rng.next() * s1;
        if (r >= first && r < first + k) w1[(r - first) * h + c] = v;
      }
    for (std::size_t r = 0; r < h; ++r)
      for (std::size_t c = 0; c < f; ++c) {
        const float v = rng.next() * s2;
        if (c >= first && c < first + k) w2[r * k + (c - first)] = v;
      }
    w.w1.push_back(std::move(w1));
    w.w2.push_back(std::move(w2));
  }
  w.head.resize(k * h);
  for (std::size_t r = 0; r < f; ++r)
    for (std::size_t c = 0; c < h; ++c) {
      const float v = rng.next();
      if (r >= first && r < first + k) w.head[(r - first) * h + c] = v;
    }
  return w;
}

}  // namespace cuda_tp
