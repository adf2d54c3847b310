// decode: embed, then per layer norm -> q | kv projection -> KV write at the device position ->
// attention scores -> combine (single or split) -> output projection + residual -> MLP up ->
// MLP down + residual -> bias fillers up to kernels_per_layer; then the final norm and the
// position advance. Launches per step: 3 + layers * (kernels_per_layer + split_combine).
//
// Toggles: overlap puts the kv projection and the KV write on the side stream (fork/join);
// split_combine fissions the attention combine into per-chunk partials and a merge (bit-identical
// to the single kernel, kernels/decode.hpp); freeze_pointer passes the KV row address
// computed on the host (the frozen-pointer bug); lazy_init allocates the scores buffer on first
// use after a reset, inside the step (so a capture of the first step fails); allreduce (world > 1)
// sums the MLP-up activations of every rank's shard (its own MLP-up weights) with one all-reduce
// per layer, so every rank continues from the same sum and all ranks' outputs are bit-identical.
#pragma once

#include <map>
#include <memory>
#include <tuple>

#include "../workload.hpp"

namespace graphrt {

// What decode's weights are a function of: their sizes, the seed and the MLP-up stream (a
// tensor-parallel shard's own). Toggles are not in it: no toggle changes a weight.
struct DecodeWeightsKey {
  std::uint32_t layers = 0, hidden = 0, max_pos = 0;
  std::uint64_t seed = 0, w1_stream = 0;
  auto tie() const { return std::tie(layers, hidden, max_pos, seed, w1_stream); }
  bool operator<(const DecodeWeightsKey& o) const { return tie() < o.tie(); }
};

// The weights of one key on the device: generated and uploaded once, then read-only. Kernels get
// them only as `const float*` (every weight argument of kernels/decode.hpp is const), so no step
// writes them: workloads of different toggles (capture keys) share one set, and a graph captured
// from one workload names the same addresses its eager steps read.
class DecodeWeights {
 public:
  DecodeWeights(Backend& b, const DecodeWeightsKey& k);
  const float* emb() const { return emb_.get(); }
  const float* g_norm() const { return g_norm_.get(); }
  const float* g_final() const { return g_final_.get(); }
  const float* wq() const { return wq_.get(); }
  const float* wkv() const { return wkv_.get(); }
  const float* wo() const { return wo_.get(); }
  const float* w1() const { return w1_.get(); }
  const float* w2() const { return w2_.get(); }
  const float* bias() const { return bias_.get(); }
  // FNV-1a 64 over every weight's bytes on the device, in member order (a synchronous copy; for
  // tests that show the steps leave the weights as generated).
  std::string digest() const;

 private:
  DeviceBuffer<float> emb_, g_norm_, g_final_, wq_, wkv_, wo_, w1_, w2_, bias_;
};

// One process's decode weights by key, shared by every workload of that key while any holds them
// (the shelf keeps no set alive by itself: the last workload to let go frees it).
class WeightShelf {
 public:
  std::shared_ptr<const DecodeWeights> decode(Backend& b, const DecodeWeightsKey& k);
  // The digests of the sets alive now, by key order.
  std::vector<std::string> digests() const;
  // Sets generated and uploaded so far (a workload that found its set shared adds none).
  std::size_t made() const { return made_; }
  // Planted bug for tests: decode workloads with `overlap` double the shared bias weights in place
  // (their first bias filler) — a write to a buffer several arms share.
  bool plant_shared_write = false;

 private:
  std::map<DecodeWeightsKey, std::weak_ptr<const DecodeWeights>> decode_;
  std::size_t made_ = 0;
};

class DecodeWorkload final : public Workload {
 public:
  // `shelf`: where weights are shared with the process's other decode workloads; null: its own.
  DecodeWorkload(Backend& backend, const Request& req, Shard shard, WeightShelf* shelf = nullptr);
  void reset(std::uint64_t seed) override;
  void run_step(Context& ctx) override;
  std::vector<std::byte> output() override;
  std::vector<std::string> inert_toggles() const override;

 private:
  float* scores(Context& ctx);
  void take_weights(std::uint64_t seed);

  Backend& backend_;
  Toggles toggles_;
  Shard shard_;
  bool allreduce_;  // the toggle, with more than one rank
  std::uint32_t layers_, kpl_, h_, max_pos_;
  std::uint32_t host_pos_ = 0;  // the host's copy of the position (read only by freeze_pointer)
  std::unique_ptr<WeightShelf> own_shelf_;  // when made without a shelf
  WeightShelf* shelf_;
  // Weights, per layer contiguous, of the seed made with or of the last reset.
  std::shared_ptr<const DecodeWeights> weights_;
  std::optional<std::uint64_t> weights_seed_;
  // State and scratch.
  DeviceBuffer<float> k_cache_, v_cache_, x_, h_buf_, q_, kv_, scores_, att_, u_, out_;
  DeviceBuffer<std::uint32_t> pos_;
  DeviceBuffer<float> lazy_scores_;
  DeviceBuffer<float> part_a_, part_md_;  // split_combine only: the attention chunks' partials
};

}  // namespace graphrt
