// A transformer decode step in CUDA, served to orch through orch_rank.h (examples/cuda-decode/README.md).
//
//   nvcc -O2 -std=c++17 -arch=sm_90 -I ranklib/cpp examples/cuda-decode/decode.cu -o cuda-decode
//   cuda-decode                 serves the orch-rank protocol (orch starts it as a resident rank)
//   cuda-decode --standalone [--steps N] [--warmup W] [--reps R]
//                               times eager, graph and graph+PDL by itself and prints one JSON line
//
// One step: embed the token in the device slot `static_tok`; per layer RMS norm, the q/k/v matvec,
// the KV-cache write at the device position, attention over rows 0..pos, the output projection
// plus residual, RMS norm, MLP up (SiLU) and down plus residual; the final norm writes `logits`;
// the position advances on the device. Every kernel reads the position and the token from device
// memory when it runs, never from a host value baked into its launch, so a replayed graph steps
// on as the eager loop does. Reductions are fixed-order warp shuffles (no atomics): one input,
// one set of output bits.
//
// Toggles: GRAPH (the body as one graph), PDL (programmatic dependent launch on every kernel),
// STALE_INPUT (a planted bug: under GRAPH the host staging of the token is skipped, as if the
// graph held it; replay 1 still matches eager step 1, replay 2 reads a stale token and the
// identity gate fails there).
// Params (ORCH_PARAMS): layers 24, hidden 1024 (a multiple of 64: the head size), max_pos 128,
// prompt 64 (tokens per prompt, picked by the request's seed), seed 1 (the weights).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "orch_rank.h"

namespace {

constexpr int kVocab = 4096;
constexpr int kHeadDim = 64;
constexpr int kWarps = 8;  // a matvec block: one warp per output row
constexpr int kNormThreads = 256;
constexpr int kAttnThreads = 128;

// ---- device code -----------------------------------------------------------------------------

// With PDL a kernel may start while the one before it still runs; cudaGridDependencySynchronize()
// is where it waits for that kernel to finish and its writes to show, so every kernel calls it
// before touching global memory (without PDL it returns at once). The trigger then lets the next
// kernel launch early: it too waits for this grid's completion before it reads anything.
__device__ __forceinline__ void wait_for_previous_kernel() {
  cudaGridDependencySynchronize();
  cudaTriggerProgrammaticLaunchCompletion();
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// A uniform number in [-1, 1) from (seed, tensor, index): splitmix64, so any thread makes any weight.
__device__ float uniform(std::uint64_t seed, std::uint64_t tensor, std::uint64_t i) {
  std::uint64_t z = seed * 0x9e3779b97f4a7c15ULL + tensor * 0xd1b54a32d192ed03ULL + i;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 8388608.0f) - 1.0f;
}

__global__ void fill(float* w, std::size_t n, std::uint64_t seed, std::uint64_t tensor, float scale, float offset) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    w[i] = offset + scale * uniform(seed, tensor, i);
}

__global__ void embed(const float* table, const int* tok, float* x, int h) {
  wait_for_previous_kernel();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < h) x[i] = table[static_cast<std::size_t>(*tok) * h + i];
}

// y = x / rms(x) * gamma, one block.
__global__ void rms_norm(const float* x, const float* gamma, float* y, int h) {
  wait_for_previous_kernel();
  __shared__ float partial[kNormThreads / 32];
  float ss = 0;
  for (int i = threadIdx.x; i < h; i += blockDim.x) ss += x[i] * x[i];
  ss = warp_sum(ss);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
  __syncthreads();
  float total = 0;
  for (int w = 0; w < kNormThreads / 32; ++w) total += partial[w];
  const float scale = rsqrtf(total / static_cast<float>(h) + 1e-6f);
  for (int i = threadIdx.x; i < h; i += blockDim.x) y[i] = x[i] * scale * gamma[i];
}

// y[r] = act(W[r] . x) (+ residual[r]); one warp per row, cols a multiple of 4. `residual` may be
// `y` (an in-place residual add: each row is read and written by its own lane), never `x`.
__global__ void matvec(const float* w, const float* x, float* y, const float* residual, int rows, int cols, bool silu) {
  wait_for_previous_kernel();
  const int row = blockIdx.x * kWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float4* wr = reinterpret_cast<const float4*>(w + static_cast<std::size_t>(row) * cols);
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float s = 0;
  for (int c = lane; c < cols / 4; c += 32) {
    const float4 a = wr[c], b = x4[c];
    s += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
  }
  s = warp_sum(s);
  if (lane != 0) return;
  if (silu) s = s / (1.0f + expf(-s));
  y[row] = residual != nullptr ? residual[row] + s : s;
}

// Row `*pos` of the layer's K and V caches := this step's k and v.
__global__ void kv_write(const float* qkv, float* k_cache, float* v_cache, const int* pos, int h) {
  wait_for_previous_kernel();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= h) return;
  const std::size_t row = static_cast<std::size_t>(*pos) * h;
  k_cache[row + i] = qkv[h + i];
  v_cache[row + i] = qkv[2 * h + i];
}

// One block per head: softmax(q . k_t / sqrt(d)) over t = 0..*pos, then the weighted sum of v_t.
// Dynamic shared memory: one score per cache row (max_pos floats).
__global__ void attention(const float* qkv, const float* k_cache, const float* v_cache, const int* pos, float* out, int h) {
  wait_for_previous_kernel();
  extern __shared__ float scores[];
  __shared__ float inv_sum;
  const int n = *pos + 1;  // the loop bound comes from the device, so a replay attends one row further
  const int head = blockIdx.x * kHeadDim;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const float* q = qkv + head;
  for (int t = warp; t < n; t += kAttnThreads / 32) {
    const float* k = k_cache + static_cast<std::size_t>(t) * h + head;
    const float s = warp_sum(q[lane] * k[lane] + q[lane + 32] * k[lane + 32]);
    if (lane == 0) scores[t] = s * rsqrtf(static_cast<float>(kHeadDim));
  }
  __syncthreads();
  if (warp == 0) {
    float top = -INFINITY;
    for (int t = lane; t < n; t += 32) top = fmaxf(top, scores[t]);
    top = warp_max(top);
    float sum = 0;
    for (int t = lane; t < n; t += 32) sum += (scores[t] = expf(scores[t] - top));
    sum = warp_sum(sum);
    if (lane == 0) inv_sum = 1.0f / sum;
  }
  __syncthreads();
  if (threadIdx.x >= kHeadDim) return;
  float acc = 0;
  for (int t = 0; t < n; ++t) acc += scores[t] * v_cache[static_cast<std::size_t>(t) * h + head + threadIdx.x];
  out[head + threadIdx.x] = acc * inv_sum;
}

__global__ void advance(int* pos, int max_pos) {
  wait_for_previous_kernel();
  if (threadIdx.x == 0) *pos = (*pos + 1) % max_pos;
}

// ---- host code -------------------------------------------------------------------------------

unsigned blocks(long long n, int per_block) { return static_cast<unsigned>((n + per_block - 1) / per_block); }

// Every kernel of the step goes through here: PDL on and off are the same cudaLaunchKernelEx
// call, only the attribute's value differs.
template <typename... Params, typename... Args>
void launch(bool pdl, void (*kernel)(Params...), unsigned grid, unsigned block, std::size_t smem, Args... args) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = pdl ? 1 : 0;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(block);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = orch_rank::stream();
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  ORCH_CUDA(cudaLaunchKernelEx(&cfg, kernel, args...));
}

class Decode : public orch_rank::Program {
 public:
  ~Decode() override {
    for (void* p : device_) (void)cudaFree(p);
    if (tokens_ != nullptr) (void)cudaFreeHost(tokens_);
  }

  std::string name() const override { return "cuda-decode"; }
  std::vector<std::string> toggles() const override { return {"GRAPH", "PDL", "STALE_INPUT"}; }
  std::string graph_toggle() const override { return "GRAPH"; }

  void setup(const orch_rank::Params& p) override {
    layers_ = static_cast<int>(p.get_int("layers", 24));
    h_ = static_cast<int>(p.get_int("hidden", 1024));
    max_pos_ = static_cast<int>(p.get_int("max_pos", 128));
    prompt_ = static_cast<int>(p.get_int("prompt", 64));
    const auto seed = static_cast<std::uint64_t>(p.get_int("seed", 1));
    if (layers_ < 1 || layers_ > 256) throw std::invalid_argument("layers must be 1..256");
    if (h_ < kHeadDim || h_ > 8192 || h_ % kHeadDim != 0) throw std::invalid_argument("hidden must be a multiple of 64 in 64..8192");
    if (max_pos_ < 1 || max_pos_ > 8192) throw std::invalid_argument("max_pos must be 1..8192 (its scores live in shared memory)");
    if (prompt_ < 2 || prompt_ > kVocab) throw std::invalid_argument("prompt must be 2..4096");
    ffn_ = 4 * h_;
    const std::size_t h = static_cast<std::size_t>(h_), f = static_cast<std::size_t>(ffn_);

    std::uint64_t tensor = 0;
    const auto weights = [&](std::size_t n, std::size_t fan_in) {
      return random(n, seed, tensor++, 1.0f / std::sqrt(static_cast<float>(fan_in)), 0.0f);
    };
    const auto gamma = [&] { return random(h, seed, tensor++, 0.1f, 1.0f); };
    embed_ = random(kVocab * h, seed, tensor++, 1.0f, 0.0f);
    for (int l = 0; l < layers_; ++l)
      layer_.push_back({gamma(), weights(3 * h * h, h), weights(h * h, h), gamma(), weights(f * h, h), weights(h * f, f)});
    final_gamma_ = gamma();

    // The step's state in one allocation, so that reset() is one memset; every part is a
    // multiple of 64 floats, which keeps the float4 loads aligned.
    const std::size_t cache = static_cast<std::size_t>(layers_) * max_pos_ * h;
    state_bytes_ = (4 * h + 3 * h + f + 2 * cache) * sizeof(float);
    float* s = static_cast<float*>(alloc(state_bytes_));
    for (float** part : {&x_, &norm_, &attn_, &logits_}) {
      *part = s;
      s += h;
    }
    qkv_ = s;
    s += 3 * h;
    u_ = s;
    s += f;
    k_cache_ = s;
    v_cache_ = s + cache;
    ints_ = static_cast<int*>(alloc(2 * sizeof(int)));  // [0] the position, [1] the token slot
    ORCH_CUDA(cudaMallocHost(&tokens_, static_cast<std::size_t>(prompt_) * sizeof(int)));
    ORCH_CUDA(cudaStreamSynchronize(orch_rank::stream()));
  }

  // The request's seed picks the prompt: a stride prime to the vocabulary keeps its tokens distinct.
  void reset() override {
    cudaStream_t s = orch_rank::stream();
    ORCH_CUDA(cudaStreamSynchronize(s));  // no staging copy may still read the tokens rewritten here
    const auto first = static_cast<int>(orch_rank::seed() % kVocab);
    for (int i = 0; i < prompt_; ++i) tokens_[i] = (first + 1009 * i) % kVocab;
    ORCH_CUDA(cudaMemsetAsync(x_, 0, state_bytes_, s));
    ORCH_CUDA(cudaMemsetAsync(ints_, 0, 2 * sizeof(int), s));
    ORCH_CUDA(cudaMemcpyAsync(ints_ + 1, &tokens_[0], sizeof(int), cudaMemcpyHostToDevice, s));
    ORCH_CUDA(cudaStreamSynchronize(s));
    steps_ = 0;
  }

  void step(const orch_rank::Toggles& t) override {
    const bool graph = t.on("GRAPH"), pdl = t.on("PDL");
    // Host staging before the body, from the pinned prompt: a graph does not hold this copy, so
    // a replay reads whatever token the slot has.
    if (!(graph && t.on("STALE_INPUT")))
      ORCH_CUDA(cudaMemcpyAsync(ints_ + 1, &tokens_[steps_ % prompt_], sizeof(int), cudaMemcpyHostToDevice, orch_rank::stream()));
    // A PDL graph keeps its programmatic edges; it is another graph than the one without them.
    if (graph) orch_rank::graph(pdl ? "decode+pdl" : "decode", [&] { body(pdl); });
    else body(pdl);
    ++steps_;
  }

  std::vector<orch_rank::Output> outputs() override {
    return {{"logits", logits_, static_cast<std::size_t>(h_) * sizeof(float), true}};
  }

  std::map<std::string, double> counters() override { return {{"launches_per_step", launches_per_step()}}; }

  int launches_per_step() const { return 8 * layers_ + 3; }
  const float* logits() const { return logits_; }
  int hidden() const { return h_; }

 private:
  struct Layer {
    float *norm1, *wqkv, *wo, *norm2, *wup, *wdown;
  };

  void* alloc(std::size_t bytes) {
    void* p = nullptr;
    ORCH_CUDA(cudaMalloc(&p, bytes));
    device_.push_back(p);
    return p;
  }

  float* random(std::size_t n, std::uint64_t seed, std::uint64_t tensor, float scale, float offset) {
    auto* w = static_cast<float*>(alloc(n * sizeof(float)));
    launch(false, fill, 1024, 256, 0, w, n, seed, tensor, scale, offset);
    return w;
  }

  // The launches of one step: what orch_rank::graph captures.
  void body(bool pdl) {
    const int h = h_;
    int* pos = ints_;
    const int* tok = ints_ + 1;
    const std::size_t cache = static_cast<std::size_t>(max_pos_) * h;
    const std::size_t attn_smem = static_cast<std::size_t>(max_pos_) * sizeof(float);
    const unsigned row_block = kWarps * 32;
    launch(pdl, embed, blocks(h, 256), 256, 0, embed_, tok, x_, h);
    for (int l = 0; l < layers_; ++l) {
      const Layer& w = layer_[static_cast<std::size_t>(l)];
      float* kc = k_cache_ + l * cache;
      float* vc = v_cache_ + l * cache;
      launch(pdl, rms_norm, 1, kNormThreads, 0, x_, w.norm1, norm_, h);
      launch(pdl, matvec, blocks(3 * h, kWarps), row_block, 0, w.wqkv, norm_, qkv_, nullptr, 3 * h, h, false);
      launch(pdl, kv_write, blocks(h, 256), 256, 0, qkv_, kc, vc, pos, h);
      launch(pdl, attention, static_cast<unsigned>(h / kHeadDim), kAttnThreads, attn_smem, qkv_, kc, vc, pos, attn_, h);
      launch(pdl, matvec, blocks(h, kWarps), row_block, 0, w.wo, attn_, x_, x_, h, h, false);
      launch(pdl, rms_norm, 1, kNormThreads, 0, x_, w.norm2, norm_, h);
      launch(pdl, matvec, blocks(ffn_, kWarps), row_block, 0, w.wup, norm_, u_, nullptr, ffn_, h, true);
      launch(pdl, matvec, blocks(h, kWarps), row_block, 0, w.wdown, u_, x_, x_, h, ffn_, false);
    }
    launch(pdl, rms_norm, 1, kNormThreads, 0, x_, final_gamma_, logits_, h);
    launch(pdl, advance, 1, 32, 0, pos, max_pos_);
  }

  int layers_ = 0, h_ = 0, ffn_ = 0, max_pos_ = 0, prompt_ = 0;
  std::vector<void*> device_;
  float* embed_ = nullptr;
  std::vector<Layer> layer_;
  float* final_gamma_ = nullptr;
  std::size_t state_bytes_ = 0;
  float *x_ = nullptr, *norm_ = nullptr, *attn_ = nullptr, *logits_ = nullptr, *qkv_ = nullptr, *u_ = nullptr;
  float *k_cache_ = nullptr, *v_cache_ = nullptr;
  int* ints_ = nullptr;     // device: the position and the token slot
  int* tokens_ = nullptr;   // pinned host: the prompt
  long long steps_ = 0;     // steps since reset
};

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const std::size_t n = xs.size();
  return n % 2 == 1 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

// Eager, graph and graph+PDL timed outside orch, interleaved (each rep rotates the order, so no
// variant always runs first), each run from the reset state as a rep: the graph captured by an
// untimed step, the warm-up, then `steps` steps timed together on the stream. Under orch's
// injection library (CUDA_INJECTION64_PATH) each run pauses it for the timed steps as a rank's rep
// does (orch_rank::RepCounting; ORCH_INJECT_PAUSE=never: counted throughout, as before pause).
int standalone(int steps, int warmup, int reps) {
  Decode d;
  d.setup(orch_rank::Params::from_env());
  orch_rank::RepCounting counting;
  int paused_runs = 0;  // runs whose timed steps ran with the injection library paused
  struct Variant {
    const char* name;
    orch_rank::Toggles toggles;
    std::vector<double> ms;
    std::string hash;
  };
  std::vector<Variant> variants(3);
  variants[0].name = "eager";
  variants[1].name = "graph";
  variants[1].toggles.set("GRAPH", true);
  variants[2].name = "graph_pdl";
  variants[2].toggles.set("GRAPH", true);
  variants[2].toggles.set("PDL", true);
  cudaStream_t s = orch_rank::stream();
  cudaEvent_t start = nullptr, end = nullptr;
  ORCH_CUDA(cudaEventCreate(&start));
  ORCH_CUDA(cudaEventCreate(&end));
  std::vector<float> host(static_cast<std::size_t>(d.hidden()));
  for (int r = 0; r < reps; ++r) {
    for (std::size_t j = 0; j < variants.size(); ++j) {
      Variant& v = variants[(static_cast<std::size_t>(r) + j) % variants.size()];
      counting.rep_start();
      d.reset();
      if (v.toggles.on("GRAPH")) {
        d.step(v.toggles);
        d.reset();
      }
      for (int i = 0; i < warmup; ++i) d.step(v.toggles);
      if (warmup > 0 && counting.timed_steps_begin()) ++paused_runs;
      ORCH_CUDA(cudaEventRecord(start, s));
      for (int i = 0; i < steps; ++i) d.step(v.toggles);
      ORCH_CUDA(cudaEventRecord(end, s));
      ORCH_CUDA(cudaEventSynchronize(end));
      float ms = 0;
      ORCH_CUDA(cudaEventElapsedTime(&ms, start, end));
      v.ms.push_back(static_cast<double>(ms) / steps);
      ORCH_CUDA(cudaMemcpy(host.data(), d.logits(), host.size() * sizeof(float), cudaMemcpyDeviceToHost));
      v.hash = orch_rank::fnv1a64_hex(host.data(), host.size() * sizeof(float));
    }
  }
  cudaDeviceProp prop{};
  ORCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  const double eager = median(variants[0].ms), graph = median(variants[1].ms), graph_pdl = median(variants[2].ms);
  const bool match = variants[1].hash == variants[0].hash && variants[2].hash == variants[0].hash;
  namespace json = orch_rank::json;
  std::printf("{\"name\":\"cuda-decode\",\"device\":%s,\"params\":%s,\"launches_per_step\":%d,\"steps\":%d,\"warmup\":%d,"
              "\"reps\":%d,\"eager_ms\":%s,\"graph_ms\":%s,\"graph_pdl_ms\":%s,\"speedup_graph\":%s,"
              "\"speedup_graph_pdl\":%s,\"hashes_match\":%s,\"paused_runs\":%d}\n",
              json::quote(prop.name).c_str(), std::getenv("ORCH_PARAMS") != nullptr ? std::getenv("ORCH_PARAMS") : "{}",
              d.launches_per_step(), steps, warmup, reps, json::number(eager).c_str(), json::number(graph).c_str(),
              json::number(graph_pdl).c_str(), json::number(eager / graph).c_str(), json::number(eager / graph_pdl).c_str(),
              match ? "true" : "false", paused_runs);
  return match ? 0 : 1;
}

int usage() {
  std::fprintf(stderr, "usage: cuda-decode                   serve the orch-rank protocol\n"
                       "       cuda-decode --standalone [--steps N] [--warmup W] [--reps R]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 1) {
    Decode program;
    return orch_rank::serve(program);
  }
  if (std::string(argv[1]) != "--standalone") return usage();
  int steps = 64, warmup = 8, reps = 10;
  for (int i = 2; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return usage();
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--steps" && value >= 1) steps = value;
    else if (flag == "--warmup" && value >= 0) warmup = value;
    else if (flag == "--reps" && value >= 1) reps = value;
    else return usage();
  }
  try {
    return standalone(steps, warmup, reps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda-decode: %s\n", e.what());
    return 1;
  }
}
