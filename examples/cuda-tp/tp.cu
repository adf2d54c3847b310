// examples/cuda-tp's CUDA build: the tensor-parallel decode step of tp_shapes.hpp as kernels on
// the rank's card, served as a resident rank by ranklib/cpp/orch_rank.h; the CPU build
// (tp_cpu.cpp) is the same step in plain C++.
//
//   examples/cuda-tp/build-cuda.sh build/cuda-tp     (nvcc; NCCL on where it finds nccl.h)
//
// One step: embed the staged token; per layer an RMS scale, the column-parallel linear (this
// rank's rows of W1) with ReLU, the row-parallel linear (this rank's columns of W2) into a partial
// sum, one all-reduce of it (NcclAllreduce: ncclAllReduce on the step's stream, so a node of the
// captured graph; none in a gang of one), the residual add; then the column-parallel head, its
// logits shard scaled by the staged position. Reductions are fixed-order warp shuffles (no
// atomics): one input, one set of output bits, eager or replayed.
//
// Before the body the host stages the step's token and position into a device slot (one
// cudaMemcpyAsync from a pinned table that reset() fills); the body reads them from the device
// when it runs, so a replayed graph steps on as the eager loop does.
// Outputs: `hidden` (after the last all-reduce: the same on every rank) and `logits` (this
// rank's shard). Toggles: GRAPH (the step as one graph, through orch_rank::graph); STALE_INPUT
// (the planted bug: under GRAPH the rank stale_rank() names stages the token but not the
// position, so replay 2 reads the position reset() left and that rank's gate fails there; the
// head comes after the last all-reduce, so the other ranks' gates pass).
// Params (ORCH_PARAMS): layers 4, hidden 256, ffn 1024 (a multiple of WORLD_SIZE).
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "nccl_allreduce.hpp"
#include "tp_shapes.hpp"

namespace cuda_tp {

constexpr int kWarps = 8;         // a matvec block: one warp per output row
constexpr int kNormThreads = 256;  // the RMS scale: one block

// The host-staged inputs of one step; the token first, so that a stale staging copies it alone.
struct Staged {
  int token;
  int position;
};

// ---- device code -----------------------------------------------------------------------------

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void embed(const float* table, const Staged* staged, float* x, int h) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < h) x[i] = table[static_cast<std::size_t>(staged->token) * h + i];
}

// y = x / rms(x), one block of kNormThreads.
__global__ void rms_scale(const float* x, float* y, int h) {
  __shared__ float partial[kNormThreads / 32];
  float ss = 0;
  for (int i = threadIdx.x; i < h; i += blockDim.x) ss += x[i] * x[i];
  ss = warp_sum(ss);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
  __syncthreads();
  float total = 0;
  for (int w = 0; w < kNormThreads / 32; ++w) total += partial[w];
  const float scale = rsqrtf(total / static_cast<float>(h) + 1e-6f);
  for (int i = threadIdx.x; i < h; i += blockDim.x) y[i] = x[i] * scale;
}

// What a matvec does with each row's dot product before it stores it.
struct AsIs {
  __device__ float operator()(float s) const { return s; }
};
struct Relu {
  __device__ float operator()(float s) const { return fmaxf(s, 0.0f); }
};
// The head's logits scaled by the staged position, read when the kernel runs (as tp_cpu.cpp's).
struct ByPosition {
  const Staged* staged;
  __device__ float operator()(float s) const { return s * (1.0f + static_cast<float>(staged->position) / 16.0f); }
};

// y[r] = epilogue(W[r] . x), W rows x cols row-major; one warp per row.
template <typename Epilogue>
__global__ void matvec(const float* w, const float* x, float* y, int rows, int cols, Epilogue epilogue) {
  const int row = blockIdx.x * kWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* wr = w + static_cast<std::size_t>(row) * cols;
  float s = 0;
  for (int c = lane; c < cols; c += 32) s += wr[c] * x[c];
  s = warp_sum(s);
  if (lane == 0) y[row] = epilogue(s);
}

__global__ void add(float* x, const float* d, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += d[i];
}

// ---- host code -------------------------------------------------------------------------------

unsigned blocks(long long n, int per_block) { return static_cast<unsigned>((n + per_block - 1) / per_block); }

// Every kernel of the step goes onto the stream orch times and captures.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), unsigned grid, unsigned block, Args... args) {
  kernel<<<grid, block, 0, orch_rank::stream()>>>(args...);
  ORCH_CUDA(cudaGetLastError());
}

template <typename Epilogue>
void matvec_on_stream(const float* w, const float* x, float* y, int rows, int cols, Epilogue e) {
  launch(matvec<Epilogue>, blocks(rows, kWarps), kWarps * 32, w, x, y, rows, cols, e);
}

class TpDecode : public orch_rank::Program {
 public:
  ~TpDecode() override {
    comm_.reset();  // before the buffers it may still reference
    for (void* p : device_) (void)cudaFree(p);
    if (table_ != nullptr) (void)cudaFreeHost(table_);
  }

  std::string name() const override { return "cuda-tp"; }
  std::vector<std::string> toggles() const override { return {"GRAPH", "STALE_INPUT"}; }
  std::string graph_toggle() const override { return "GRAPH"; }

  void setup(const orch_rank::Params& p) override {
    s_ = shapes_from(p);
    comm_ = std::make_unique<NcclAllreduce>(s_.rank, s_.world);  // first: a build without NCCL refuses a gang before any upload
    const Weights w = make_weights(s_);
    embed_ = upload(w.embed);
    for (int l = 0; l < s_.layers; ++l) {
      w1_.push_back(upload(w.w1[static_cast<std::size_t>(l)]));
      w2_.push_back(upload(w.w2[static_cast<std::size_t>(l)]));
    }
    head_ = upload(w.head);
    const auto h = static_cast<std::size_t>(s_.hidden), k = static_cast<std::size_t>(s_.shard());
    state_floats_ = 3 * h + 2 * k;
    float* s = static_cast<float*>(alloc(state_floats_ * sizeof(float)));
    x_ = s;
    norm_ = x_ + h;
    partial_ = norm_ + h;
    act_ = partial_ + h;
    logits_ = act_ + k;
    staged_ = static_cast<Staged*>(alloc(sizeof(Staged)));
    ORCH_CUDA(cudaMallocHost(&table_, kVocab * sizeof(Staged)));
  }

  // The request's seed picks the tokens; the table is rewritten only here, after the stream has
  // drained, so no staging copy still reads it.
  void reset() override {
    cudaStream_t s = orch_rank::stream();
    ORCH_CUDA(cudaStreamSynchronize(s));
    for (int i = 0; i < kVocab; ++i) table_[i] = {token_at(orch_rank::seed(), i), position_at(i)};
    ORCH_CUDA(cudaMemsetAsync(x_, 0, state_floats_ * sizeof(float), s));
    ORCH_CUDA(cudaMemcpyAsync(staged_, &table_[0], sizeof(Staged), cudaMemcpyHostToDevice, s));
    ORCH_CUDA(cudaStreamSynchronize(s));
    steps_ = 0;
  }

  void step(const orch_rank::Toggles& t) override {
    const bool graph = t.on("GRAPH");
    const bool stale = graph && t.on("STALE_INPUT") && s_.rank == stale_rank(s_.world);
    // Host staging, never part of a graph: a replay reads whatever the slot holds.
    ORCH_CUDA(cudaMemcpyAsync(staged_, &table_[steps_ % kVocab], stale ? sizeof(int) : sizeof(Staged),
                              cudaMemcpyHostToDevice, orch_rank::stream()));
    if (graph) orch_rank::graph("tp-step", [&] { body(); });
    else body();
    ++steps_;
  }

  std::vector<orch_rank::Output> outputs() override {
    return {{"hidden", x_, static_cast<std::size_t>(s_.hidden) * sizeof(float), true},
            {"logits", logits_, static_cast<std::size_t>(s_.shard()) * sizeof(float), true}};
  }

 private:
  void* alloc(std::size_t bytes) {
    void* p = nullptr;
    ORCH_CUDA(cudaMalloc(&p, bytes));
    device_.push_back(p);
    return p;
  }

  const float* upload(const std::vector<float>& host) {
    auto* d = static_cast<float*>(alloc(host.size() * sizeof(float)));
    ORCH_CUDA(cudaMemcpy(d, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
    return d;
  }

  // The launches of one step: what orch_rank::graph captures, the all-reduces among them.
  void body() {
    const int h = s_.hidden, k = s_.shard();
    launch(embed, blocks(h, 256), 256, embed_, staged_, x_, h);
    for (int l = 0; l < s_.layers; ++l) {
      const auto i = static_cast<std::size_t>(l);
      launch(rms_scale, 1, kNormThreads, x_, norm_, h);
      matvec_on_stream(w1_[i], norm_, act_, k, h, Relu{});       // column-parallel: this rank's rows of W1
      matvec_on_stream(w2_[i], act_, partial_, h, k, AsIs{});    // row-parallel: a partial sum
      comm_->sum(partial_, static_cast<std::size_t>(h));         // the layer's one collective
      launch(add, blocks(h, 256), 256, x_, static_cast<const float*>(partial_), h);
    }
    matvec_on_stream(head_, x_, logits_, k, h, ByPosition{staged_});
  }

  Shapes s_;
  std::unique_ptr<NcclAllreduce> comm_;
  std::vector<void*> device_;
  const float* embed_ = nullptr;
  std::vector<const float*> w1_, w2_;
  const float* head_ = nullptr;
  std::size_t state_floats_ = 0;
  float *x_ = nullptr, *norm_ = nullptr, *partial_ = nullptr, *act_ = nullptr, *logits_ = nullptr;
  Staged* staged_ = nullptr;  // device: this step's token and position
  Staged* table_ = nullptr;   // pinned host: the staged inputs of steps 0..kVocab-1, by step % kVocab
  long long steps_ = 0;       // steps since reset
};

}  // namespace cuda_tp

int main() {
  cuda_tp::TpDecode program;
  return orch_rank::serve(program);
}
