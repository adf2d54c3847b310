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

#include "../workload.hpp"

namespace graphrt {

class DecodeWorkload final : public Workload {
 public:
  DecodeWorkload(Backend& backend, const Request& req, Shard shard);
  void reset(std::uint64_t seed) override;
  void run_step(Context& ctx) override;
  std::vector<std::byte> output() override;
  std::vector<std::string> inert_toggles() const override;

 private:
  float* scores(Context& ctx);
  void upload_weights(std::uint64_t seed);

  Backend& backend_;
  Toggles toggles_;
  Shard shard_;
  bool allreduce_;  // the toggle, with more than one rank
  std::uint32_t layers_, kpl_, h_, max_pos_;
  std::uint32_t host_pos_ = 0;
  std::optional<std::uint64_t> weights_seed_;  // the seed the weights on the device were made from  // the host's copy of the position (read only by freeze_pointer)
  // Weights, per layer contiguous.
  DeviceBuffer<float> emb_, g_norm_, g_final_, wq_, wkv_, wo_, w1_, w2_, bias_;
  // State and scratch.
  DeviceBuffer<float> k_cache_, v_cache_, x_, h_buf_, q_, kv_, scores_, att_, u_, out_;
  DeviceBuffer<std::uint32_t> pos_;
  DeviceBuffer<float> lazy_scores_;
  DeviceBuffer<float> part_a_, part_md_;  // split_combine only: the attention chunks' partials
};

}  // namespace graphrt
