// Issue 40's open question, asked of one program: why does a user's graph pay 0.44-0.49 µs a node
// beyond its eager busy time where graphrt's graphs pay 0.09-0.15 (bench/h200/runs/2026-12-05/
// node-cost.txt)? The CUDA example's step (examples/cuda-decode/decode.cu, compiled into this file)
// is timed as a graph built each way the rank library and graphrt differ, in one process, on the
// same kernels:
//
//   rank          orch_rank::graph(): thread-local capture, no upload, the rank's non-blocking
//                 stream; the token staged by a copy before the launch (as a rank's step)
//   rank-nocopy   the same graph without the staging copy (STALE_INPUT): what the copy costs
//   rank-pdl      the rank library's graph with PDL (the example's graph+PDL arm)
//   own-*         the eager step captured here, the copy a memcpy node inside the graph:
//                 capture global|local, upload or not, launched on the non-blocking stream or a
//                 cudaStreamDefault one (graphrt's: global, upload, default)
//   eager         the step without a graph
//
// Each variant is timed two ways: per step (event, step, event, synchronize: how a rank library and
// graphrt time a step; the card idles while the host launches) and back to back (the steps queued
// with no synchronize between them; events around them all), so that launch latency, which only
// the first pays, is told apart from a cost on the device per node.
//
// Under orch's injection library in trace mode (CUDA_INJECTION64_PATH, ORCH_INJECT_TRACE=1) it runs
// the eager step only and prints the traced busy time per step: the union of the kernels'
// intervals, as the trace probe and graphrt's KernelTrace take it.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 -I ranklib/cpp bench/h200/user-rank/graph-variants.cu \
//        native/src/kernel_trace.cpp -ldl -o graph-variants
//   graph-variants [--steps N] [--warmup W] [--reps R]       (ORCH_PARAMS as the example's)
//   bench/h200/user-rank/graph-variants.sh                   builds, runs both ways, prints a table
#define main cuda_decode_main
#include "../../../examples/cuda-decode/decode.cu"
#undef main

#include <functional>

#include "../../../native/src/kernel_trace.hpp"

namespace graph_variants {

struct Timing {
  std::vector<double> per_step_ms;      // one median per rep
  std::vector<double> back_to_back_ms;  // one per rep
};

struct OwnGraph {
  cudaStreamCaptureMode mode;
  bool upload;
  bool default_stream;
};

// A graph of the example's eager step (its staging copy a node), captured on the rank's stream.
cudaGraphExec_t capture_eager_step(Decode& d, const OwnGraph& how, cudaStream_t launch_on) {
  cudaStream_t s = orch_rank::stream();
  ORCH_CUDA(cudaStreamBeginCapture(s, how.mode));
  d.step(orch_rank::Toggles{});
  cudaGraph_t g = nullptr;
  ORCH_CUDA(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t exec = nullptr;
  ORCH_CUDA(cudaGraphInstantiate(&exec, g, 0));
  ORCH_CUDA(cudaGraphDestroy(g));
  if (how.upload) ORCH_CUDA(cudaGraphUpload(exec, launch_on));
  ORCH_CUDA(cudaStreamSynchronize(launch_on));
  return exec;
}

double median_of(std::vector<double> xs) { return median(std::move(xs)); }

// One rep: `step` run warmup + steps times per step, then steps times back to back.
void time_rep(const std::function<void()>& step, cudaStream_t s, int steps, int warmup, Timing& into) {
  cudaEvent_t a = nullptr, b = nullptr;
  ORCH_CUDA(cudaEventCreate(&a));
  ORCH_CUDA(cudaEventCreate(&b));
  std::vector<double> each;
  for (int i = 0; i < warmup + steps; ++i) {
    ORCH_CUDA(cudaEventRecord(a, s));
    step();
    ORCH_CUDA(cudaEventRecord(b, s));
    ORCH_CUDA(cudaStreamSynchronize(s));
    float ms = 0;
    ORCH_CUDA(cudaEventElapsedTime(&ms, a, b));
    if (i >= warmup) each.push_back(ms);
  }
  into.per_step_ms.push_back(median_of(each));
  ORCH_CUDA(cudaEventRecord(a, s));
  for (int i = 0; i < steps; ++i) step();
  ORCH_CUDA(cudaEventRecord(b, s));
  ORCH_CUDA(cudaStreamSynchronize(s));
  float ms = 0;
  ORCH_CUDA(cudaEventElapsedTime(&ms, a, b));
  into.back_to_back_ms.push_back(static_cast<double>(ms) / steps);
  ORCH_CUDA(cudaEventDestroy(a));
  ORCH_CUDA(cudaEventDestroy(b));
}

void print(const char* name, int nodes, const Timing& t) {
  std::printf("{\"variant\":\"%s\",\"nodes\":%d,\"per_step_ms\":%.6f,\"back_to_back_ms\":%.6f,\"reps\":%zu}\n", name, nodes,
              median_of(t.per_step_ms), median_of(t.back_to_back_ms), t.per_step_ms.size());
}

int traced_eager(Decode& d, graphrt::KernelTrace& trace, int steps, int warmup) {
  cudaStream_t s = orch_rank::stream();
  d.reset();
  for (int i = 0; i < warmup; ++i) d.step(orch_rank::Toggles{});
  ORCH_CUDA(cudaStreamSynchronize(s));
  trace.drain();
  for (int i = 0; i < steps; ++i) {
    d.step(orch_rank::Toggles{});
    ORCH_CUDA(cudaStreamSynchronize(s));
  }
  const std::optional<double> per_kernel = trace.busy_ns_per_kernel();
  if (!per_kernel) {
    std::fprintf(stderr, "graph-variants: the injection library traced no kernel\n");
    return 1;
  }
  std::printf("{\"variant\":\"eager-traced\",\"kernels_per_step\":%d,\"busy_ns_per_kernel\":%.3f,\"busy_ms_per_step\":%.6f}\n",
              d.launches_per_step(), *per_kernel, *per_kernel * d.launches_per_step() / 1e6);
  return 0;
}

int run(int steps, int warmup, int reps) {
  Decode d;
  d.setup(orch_rank::Params::from_env());
  graphrt::KernelTrace trace;
  if (trace.on()) return traced_eager(d, trace, steps, warmup);

  cudaStream_t rank_stream = orch_rank::stream(), default_stream = nullptr;
  ORCH_CUDA(cudaStreamCreateWithFlags(&default_stream, cudaStreamDefault));
  orch_rank::Toggles eager, graph, nocopy, pdl;
  graph.set("GRAPH", true);
  pdl.set("GRAPH", true);
  pdl.set("PDL", true);
  nocopy.set("GRAPH", true);
  nocopy.set("STALE_INPUT", true);

  struct Variant {
    std::string name;
    std::function<void(Timing&)> rep;
    int nodes;
    Timing t;
  };
  std::vector<Variant> vs;
  const int kernels = d.launches_per_step();
  const auto rank_variant = [&](const std::string& name, const orch_rank::Toggles& t) {
    vs.push_back({name, [&d, &t, rank_stream, steps, warmup](Timing& into) {
                    orch_rank::drop_graphs();
                    d.reset();
                    time_rep([&] { d.step(t); }, rank_stream, steps, warmup, into);
                  },
                  kernels, {}});
  };
  rank_variant("eager", eager);
  rank_variant("rank", graph);
  rank_variant("rank-nocopy", nocopy);
  rank_variant("rank-pdl", pdl);
  for (const cudaStreamCaptureMode mode : {cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal})
    for (const bool upload : {false, true})
      for (const bool on_default : {false, true}) {
        const OwnGraph how{mode, upload, on_default};
        const std::string name = std::string("own-") + (mode == cudaStreamCaptureModeGlobal ? "global" : "local") +
                                 (upload ? "-upload" : "-noupload") + (on_default ? "-default" : "-nonblocking");
        vs.push_back({name, [&d, how, rank_stream, default_stream, steps, warmup](Timing& into) {
                        cudaStream_t s = how.default_stream ? default_stream : rank_stream;
                        d.reset();
                        cudaGraphExec_t exec = capture_eager_step(d, how, s);
                        d.reset();
                        time_rep([&] { ORCH_CUDA(cudaGraphLaunch(exec, s)); }, s, steps, warmup, into);
                        ORCH_CUDA(cudaGraphExecDestroy(exec));
                      },
                      kernels + 1, {}});
      }
  // Interleaved: each rep rotates the order, so no variant always runs first.
  for (int r = 0; r < reps; ++r)
    for (std::size_t j = 0; j < vs.size(); ++j) {
      Variant& v = vs[(static_cast<std::size_t>(r) + j) % vs.size()];
      v.rep(v.t);
    }
  for (const Variant& v : vs) print(v.name.c_str(), v.nodes, v.t);
  ORCH_CUDA(cudaStreamDestroy(default_stream));
  return 0;
}

}  // namespace graph_variants

int main(int argc, char** argv) {
  int steps = 64, warmup = 8, reps = 7;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = i + 1 < argc ? argv[i] : "";  // a flag without its value is a usage error
    const int value = i + 1 < argc ? std::atoi(argv[i + 1]) : -1;
    if (flag == "--steps" && value >= 1) steps = value;
    else if (flag == "--warmup" && value >= 0) warmup = value;
    else if (flag == "--reps" && value >= 1) reps = value;
    else {
      std::fprintf(stderr, "usage: graph-variants [--steps N] [--warmup W] [--reps R]\n");
      return 2;
    }
  }
  try {
    return graph_variants::run(steps, warmup, reps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "graph-variants: %s\n", e.what());
    return 1;
  }
}
