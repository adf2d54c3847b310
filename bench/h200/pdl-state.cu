// Where the PDL carry-over of native/BENCHMARKS.md ("Where the bimodal reps come from") lives, in
// a program of its own: graphrt's decode ran graph + PDL replays 17.5 % slower after eager launches
// without PDL, and kept that state until an eager PDL launch. This replays one captured chain of
// N tiny kernels with programmatic edges (each kernel waits with cudaGridDependencySynchronize and
// triggers right after, as graphrt's AfterWait default) after a conditioner, and prints, per
// conditioner, the median µs per node of the first and second replay after it, against the
// replay after itself. Conditioners: eager chains launched with the PDL attribute set to 0, with
// no attribute at all, with the attribute set to 1, on this stream or another; the graphs of the
// same chain captured each way; and candidate resets run after an attribute-0 chain.
//   nvcc -O2 -arch=sm_90 -o /tmp/pdl-state bench/h200/pdl-state.cu && /tmp/pdl-state [nodes] [rounds]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#define CHECK(x)                                                                               \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

__global__ void step(float* buf, int iters) {
  cudaGridDependencySynchronize();
  cudaTriggerProgrammaticLaunchCompletion();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = buf[i];
  for (int j = 0; j < iters; ++j) v = v * 0.9999f + 0.5f;
  buf[i] = v;
}

enum class Attr { Zero, None, One };
const char* name_of(Attr a) { return a == Attr::Zero ? "attr=0" : a == Attr::None ? "no attr" : "attr=1"; }

constexpr int kBlocks = 4, kThreads = 128, kIters = 32;
float* g_buf = nullptr;

void launch(cudaStream_t s, Attr a) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = a == Attr::One ? 1 : 0;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(kBlocks);
  cfg.blockDim = dim3(kThreads);
  cfg.stream = s;
  cfg.attrs = a == Attr::None ? nullptr : &attr;
  cfg.numAttrs = a == Attr::None ? 0 : 1;
  CHECK(cudaLaunchKernelEx(&cfg, step, g_buf, kIters));
}

void chain(cudaStream_t s, Attr a, int n) {
  for (int k = 0; k < n; ++k) launch(s, a);
  CHECK(cudaGetLastError());
}

cudaGraphExec_t capture(cudaStream_t s, Attr a, int n) {
  cudaGraph_t g = nullptr;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  chain(s, a, n);
  CHECK(cudaStreamEndCapture(s, &g));
  size_t nodes = 0;
  CHECK(cudaGraphGetNodes(g, nullptr, &nodes));
  if (nodes != static_cast<size_t>(n)) {
    std::fprintf(stderr, "captured %zu nodes for %d launches\n", nodes, n);
    std::exit(1);
  }
  cudaGraphExec_t e = nullptr;
  CHECK(cudaGraphInstantiate(&e, g, 0));
  CHECK(cudaGraphUpload(e, s));
  CHECK(cudaGraphDestroy(g));
  return e;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 8;
  CHECK(cudaSetDevice(0));
  CHECK(cudaMalloc(&g_buf, kBlocks * kThreads * sizeof(float)));
  CHECK(cudaMemset(g_buf, 0, kBlocks * kThreads * sizeof(float)));
  // blocking streams: nothing escapes a capture (the device README)
  cudaStream_t s = nullptr, other = nullptr;
  CHECK(cudaStreamCreate(&s));
  CHECK(cudaStreamCreate(&other));
  const cudaGraphExec_t g_pdl = capture(s, Attr::One, n), g_zero = capture(s, Attr::Zero, n), g_none = capture(s, Attr::None, n);
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  auto replay_us = [&](cudaGraphExec_t g) {
    CHECK(cudaEventRecord(e0, s));
    CHECK(cudaGraphLaunch(g, s));
    CHECK(cudaEventRecord(e1, s));
    CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    return 1000.0 * ms / n;
  };
  auto sync = [&] { CHECK(cudaDeviceSynchronize()); };
  struct Conditioner {
    std::string name;
    std::function<void()> run;
  };
  auto eager = [&](cudaStream_t st, Attr a, int count) { return [=] { chain(st, a, count); }; };
  auto then = [](std::function<void()> a, std::function<void()> b) { return [=] { a(); b(); }; };
  const std::vector<Conditioner> conditioners = {
      {"none (the PDL graph again)", [] {}},
      {"eager chain, attr=0", eager(s, Attr::Zero, n)},
      {"eager chain, no attr", eager(s, Attr::None, n)},
      {"eager chain, attr=1", eager(s, Attr::One, n)},
      {"eager chain, attr=0, other stream", eager(other, Attr::Zero, n)},
      {"eager chain, attr=1, other stream", eager(other, Attr::One, n)},
      {"graph, attr=0 capture", [&] { CHECK(cudaGraphLaunch(g_zero, s)); }},
      {"graph, no-attr capture", [&] { CHECK(cudaGraphLaunch(g_none, s)); }},
      {"1 eager kernel, attr=0", eager(s, Attr::Zero, 1)},
      {"attr=0 chain, then 1 attr=1 kernel", then(eager(s, Attr::Zero, n), eager(s, Attr::One, 1))},
      {"attr=0 chain, then 2 attr=1 kernels", then(eager(s, Attr::Zero, n), eager(s, Attr::One, 2))},
      {"attr=0 chain, then 64 attr=1 kernels", then(eager(s, Attr::Zero, n), eager(s, Attr::One, 64))},
      {"attr=0 chain, then device sync", then(eager(s, Attr::Zero, n), sync)},
      {"attr=0 chain, then 1 no-attr kernel", then(eager(s, Attr::Zero, n), eager(s, Attr::None, 1))},
  };
  // warm-up: every graph and chain once
  for (int w = 0; w < 3; ++w) {
    for (const auto& c : conditioners) c.run();
    replay_us(g_pdl);
  }
  std::vector<std::vector<double>> first(conditioners.size()), second(conditioners.size());
  std::vector<double> baseline_zero, baseline_none;
  std::mt19937 rng(20261130);
  std::vector<size_t> order(conditioners.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (int r = 0; r < rounds; ++r) {
    std::shuffle(order.begin(), order.end(), rng);
    for (const size_t i : order) {
      CHECK(cudaDeviceSynchronize());
      conditioners[i].run();
      first[i].push_back(replay_us(g_pdl));
      second[i].push_back(replay_us(g_pdl));
    }
    baseline_zero.push_back(replay_us(g_zero));
    baseline_none.push_back(replay_us(g_none));
  }
  CHECK(cudaGetLastError());
  int dev = 0;
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, dev));
  int driver = 0;
  CHECK(cudaDriverGetVersion(&driver));
  std::printf("%s, driver API %d; %d nodes of %d x %d threads, %d rounds; µs per node, medians\n", prop.name, driver, n, kBlocks, kThreads, rounds);
  std::printf("graph without PDL edges: attr=0 capture %.3f, no-attr capture %.3f\n", median(baseline_zero), median(baseline_none));
  const double ref = median(first[0]);
  std::printf("| conditioner before the PDL graph | 1st replay | ratio | 2nd replay | every round (1st) |\n| --- | --- | --- | --- | --- |\n");
  for (size_t i = 0; i < conditioners.size(); ++i) {
    std::string all;
    for (const double x : first[i]) all += (all.empty() ? "" : " ") + std::to_string(x).substr(0, 5);
    std::printf("| %s | %.3f | %.3f | %.3f | %s |\n", conditioners[i].name.c_str(), median(first[i]), median(first[i]) / ref, median(second[i]), all.c_str());
  }
  return 0;
}
