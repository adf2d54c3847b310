// Capture under stress: the check "graph nodes == launches of the eager prepare step" must hold on
// every capture, not just most (graphrt_bench --backend cpu once reported "graph holds 122 kernel
// nodes but the eager step launched 123", capture failed, eager fallback). Loops destroy ->
// prepare -> capture of decode with overlap (the side stream's fork/join) and split_combine, with
// four arms alive on one backend (as graphrt_bench has), another arm's eager step left in flight
// on the device threads (the shared compute stream and its side stream) while each capture runs,
// and busy threads loading every core. Each capture must hold exactly the prepared launches, and
// every 8th replays the eager step's output byte for byte. About 6 s.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "graph_slot.hpp"
#include "harness.hpp"
#include "steps.hpp"

using namespace graphrt;
using namespace graphrt::test;

namespace {

struct StressArm {
  Request req;
  std::unique_ptr<Context> ctx;
  std::unique_ptr<Workload> w;
  std::unique_ptr<GraphSlot> slot;
};

StressArm make_stress_arm(Backend& b, bool overlap, bool split) {
  StressArm a;
  a.req = decode_request();
  a.req.params.layers = 4;
  a.req.params.kernels_per_layer = 30;  // 123 launches (127 split): the sizes of the bench's cpu run
  a.req.params.hidden = 64;
  a.req.params.max_pos = 8;
  a.req.toggles.overlap = overlap;
  a.req.toggles.split_combine = split;
  a.ctx = std::make_unique<Context>(b);
  a.ctx->overlap = overlap;
  a.w = make_workload(b, a.req);
  a.slot = std::make_unique<GraphSlot>(b);
  return a;
}

// One eager step of `a`, left in flight: no synchronize, the device threads still run it.
void eager_step_in_flight(StressArm& a) {
  a.ctx->begin_step();
  a.w->run_step(*a.ctx);
}

}  // namespace

int main() {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::seconds(6);
  constexpr int kMaxIterations = 400;

  std::atomic<bool> stop{false};
  std::vector<std::thread> load;
  for (unsigned i = 0; i < std::max(2u, std::thread::hardware_concurrency()); ++i)
    load.emplace_back([&stop] {
      volatile std::uint64_t x = 0;
      while (!stop.load(std::memory_order_relaxed)) x = x + 1;
    });

  auto backend = make_cpu_backend();
  std::vector<StressArm> arms;
  for (int m = 0; m < 4; ++m) arms.push_back(make_stress_arm(*backend, m & 1, m & 2));

  int captures = 0, mismatches = 0, bad_replays = 0;
  for (int it = 0; it < kMaxIterations && Clock::now() < deadline; ++it) {
    StressArm& a = arms[it % arms.size()];
    StressArm& other = arms[(it + 1) % arms.size()];
    a.slot->destroy();
    a.slot->prepare(*a.ctx, *a.w, a.req.seed, "stress");
    eager_step_in_flight(other);  // another arm's step runs on the device threads meanwhile
    const CaptureOutcome out = a.slot->capture(*a.ctx, *a.w);
    ++captures;
    if (!out.ok || out.nodes != out.launches) {
      ++mismatches;
      std::fprintf(stderr, "iteration %d (overlap=%d split=%d): ok=%d nodes=%zu launches=%zu %s\n", it,
                   a.req.toggles.overlap, a.req.toggles.split_combine, out.ok, out.nodes, out.launches,
                   out.reason.c_str());
      continue;
    }
    if (it % 8 == 0) {  // graph vs eager, byte for byte, from the same reset state
      backend->synchronize();
      a.w->reset(a.req.seed);
      const auto eager = run_steps(*a.ctx, *a.w, nullptr, 0, 2).hashes;
      a.w->reset(a.req.seed);
      if (run_steps(*a.ctx, *a.w, a.slot.get(), 0, 2).hashes != eager) ++bad_replays;
    }
  }
  backend->synchronize();
  stop = true;
  for (auto& t : load) t.join();

  std::printf("capture_stress_test: %d captures, %d node/launch mismatches, %d replays differing from eager\n",
              captures, mismatches, bad_replays);
  CHECK(captures >= 40);
  CHECK_EQ(mismatches, 0);
  CHECK_EQ(bad_replays, 0);
  return finish("capture_stress_test");
}
