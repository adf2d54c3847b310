// examples/cuda-tp's CPU build: the tensor-parallel decode step of tp_shapes.hpp in plain C++,
// its all-reduce through SocketAllreduce (set up through orch's exchange), served as a resident
// rank by ranklib/cpp/orch_rank.h. No CUDA: GRAPH records the step's launches
// (orch_rank::launch, the header's host emulation of a graph) and replays them, the all-reduce
// among them as an NCCL all-reduce is among a CUDA graph's nodes.
//
//   g++ -O2 -std=c++17 -I ranklib/cpp examples/cuda-tp/tp_cpu.cpp -o build/cuda-tp-cpu
//
// Outputs: `hidden` (after the last all-reduce: the same on every rank) and `logits`, this rank's
// shard of the column-parallel head, scaled by the step's position (staged by the host).
// Toggles: GRAPH; STALE_INPUT (the planted bug: under GRAPH, rank 1 (rank 0 in a gang of one:
// stale_rank()) skips staging the position, so its replays read the position reset() left and
// its identity gate fails at replay 2; the head comes after the last all-reduce, so the other
// ranks' gates pass).
#include <algorithm>
#include <cmath>
#include <memory>

#include "socket_allreduce.hpp"
#include "tp_shapes.hpp"

namespace cuda_tp {

// y = W x, W rows x cols, row-major.
inline void matvec(const float* w, const float* x, float* y, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    float s = 0;
    for (int c = 0; c < cols; ++c) s += w[r * cols + c] * x[c];
    y[r] = s;
  }
}

class TpDecode : public orch_rank::Program {
 public:
  std::string name() const override { return "cuda-tp (cpu)"; }
  std::vector<std::string> toggles() const override { return {"GRAPH", "STALE_INPUT"}; }
  std::string graph_toggle() const override { return "GRAPH"; }

  void setup(const orch_rank::Params& p) override {
    s_ = shapes_from(p);
    w_ = make_weights(s_);
    x_.resize(static_cast<std::size_t>(s_.hidden));
    norm_.resize(x_.size());
    partial_.resize(x_.size());
    act_.resize(static_cast<std::size_t>(s_.shard()));
    logits_.resize(act_.size());
    comm_ = std::make_unique<SocketAllreduce>(s_.rank, s_.world);
  }

  void reset() override {
    token_ = token_at(orch_rank::seed(), 0);
    position_ = position_at(0);
    steps_ = 0;
    std::fill(x_.begin(), x_.end(), 0.0f);
    std::fill(logits_.begin(), logits_.end(), 0.0f);
  }

  void step(const orch_rank::Toggles& t) override {
    const bool graph = t.on("GRAPH");
    // host staging, never part of a graph: a replay reads whatever token and position are here
    token_ = token_at(orch_rank::seed(), steps_);
    if (!(graph && t.on("STALE_INPUT") && s_.rank == stale_rank(s_.world))) position_ = position_at(steps_);
    if (graph) orch_rank::graph("tp-step", [&] { body(); });
    else body();
    ++steps_;
  }

  std::vector<orch_rank::Output> outputs() override {
    return {{"hidden", x_.data(), x_.size() * sizeof(float)}, {"logits", logits_.data(), logits_.size() * sizeof(float)}};
  }

 private:
  // Each launch reads its state through pointers, as a kernel's arguments are copied at capture.
  void body() {
    const int h = s_.hidden, k = s_.shard();
    float *x = x_.data(), *norm = norm_.data(), *partial = partial_.data(), *act = act_.data();
    const float* embed = w_.embed.data();
    const int* token = &token_;
    orch_rank::launch([=] { std::copy(embed + *token * h, embed + (*token + 1) * h, x); });
    for (int l = 0; l < s_.layers; ++l) {
      const float *w1 = w_.w1[static_cast<std::size_t>(l)].data(), *w2 = w_.w2[static_cast<std::size_t>(l)].data();
      orch_rank::launch([=] {
        float ss = 0;
        for (int i = 0; i < h; ++i) ss += x[i] * x[i];
        const float scale = 1.0f / std::sqrt(ss / static_cast<float>(h) + 1e-6f);
        for (int i = 0; i < h; ++i) norm[i] = x[i] * scale;
      });
      orch_rank::launch([=] {
        matvec(w1, norm, act, k, h);  // column-parallel: this rank's rows of W1
        for (int i = 0; i < k; ++i) act[i] = std::max(act[i], 0.0f);
        matvec(w2, act, partial, h, k);  // row-parallel: this rank's columns of W2, a partial sum
      });
      SocketAllreduce* comm = comm_.get();
      orch_rank::launch([=] { comm->sum(partial, static_cast<std::size_t>(h)); });
      orch_rank::launch([=] {
        for (int i = 0; i < h; ++i) x[i] += partial[i];
      });
    }
    const float* head = w_.head.data();
    float* logits = logits_.data();
    const int* position = &position_;
    orch_rank::launch([=] {
      matvec(head, x, logits, k, h);
      const float scale = 1.0f + static_cast<float>(*position) / 16.0f;
      for (int i = 0; i < k; ++i) logits[i] *= scale;
    });
  }

  Shapes s_;
  Weights w_;
  std::vector<float> x_, norm_, partial_, act_, logits_;
  std::unique_ptr<SocketAllreduce> comm_;
  int token_ = 0;
  int position_ = 0;
  long long steps_ = 0;
};

}  // namespace cuda_tp

int main() {
  cuda_tp::TpDecode program;
  return orch_rank::serve(program);
}
