// The CUDA backend keeps backend.hpp's capture semantics (what was seen on the H200):
// on the blocking capture stream a synchronous copy, memset, allocation or synchronize fails the
// capture (CaptureFailed) instead of escaping it, end_capture then discards the graph, and the
// error state is cleared so the next eager step runs; forked work joins the capture as parallel
// branches and the graph holds exactly the launched kernels (events add edges, not nodes); an
// unjoined fork fails the capture; PDL launches give the same bits.
#include <functional>

#include "context.hpp"
#include "cuda_harness.hpp"

using namespace graphrt;
using namespace graphrt::test;

namespace {

constexpr std::uint32_t kN = 4096;

// Launches `k` chain kernels on the compute stream (and, with overlap, some on the side stream).
void chain_launches(Context& ctx, float* x, float* y, int k) {
  for (int i = 0; i < k; ++i) {
    launch<kernels::ChainKernel>(ctx, ctx.compute, kN, {x, kN, i % 2 ? -1.0f : 1.0f, 0.5f});
    if (ctx.overlap && i == k / 2) {
      ctx.fork();
      launch<kernels::ChainKernel>(ctx, ctx.side(), kN, {y, kN, 2.0f, 1.0f});
      launch<kernels::ChainKernel>(ctx, ctx.side(), kN, {y, kN, 0.5f, -1.0f});
      ctx.join();
    }
  }
}

// A capture whose body does `illegal` after a few launches: the call throws CaptureFailed and so
// does end_capture; afterwards the stream is not capturing and eager work runs.
void expect_capture_fails(Backend& b, Context& ctx, float* x, const char* what, const std::function<void()>& illegal) {
  b.begin_capture(ctx.compute);
  chain_launches(ctx, x, x, 3);
  bool threw = false;
  try {
    illegal();
  } catch (const RtError& e) {
    threw = e.errc() == Errc::CaptureFailed;
    std::printf("%s during capture: %s\n", what, e.name().c_str());
  }
  CHECK(threw);
  bool end_threw = false;
  try {
    b.graph_destroy(b.end_capture(ctx.compute));
  } catch (const RtError& e) {
    end_threw = e.errc() == Errc::CaptureFailed;
  }
  CHECK(end_threw);
  CHECK(!b.is_capturing(ctx.compute));
  chain_launches(ctx, x, x, 2);  // eager again, no error left behind
  b.synchronize();
}

}  // namespace

int main() {
  skip_without_gpu("cuda_backend_test");
#if defined(GRAPHRT_WITH_CUDA)
  auto owned = make_cuda_backend();
  Backend& b = *owned;
  {
    Context ctx(b);
    DeviceBuffer<float> x(b, kN), y(b, kN);
    std::vector<float> host(kN, 1.0f);
    b.memcpy_h2d(x.get(), host.data(), x.bytes());

    expect_capture_fails(b, ctx, x.get(), "memcpy_h2d", [&] { b.memcpy_h2d(x.get(), host.data(), x.bytes()); });
    expect_capture_fails(b, ctx, x.get(), "memcpy_d2h", [&] { b.memcpy_d2h(host.data(), x.get(), x.bytes()); });
    expect_capture_fails(b, ctx, x.get(), "memset", [&] { b.memset(y.get(), 0, y.bytes()); });
    expect_capture_fails(b, ctx, x.get(), "alloc", [&] { b.free(b.alloc(1024)); });
    expect_capture_fails(b, ctx, x.get(), "synchronize", [&] { b.synchronize(); });

    // Fork/join: parallel branches in one graph, nodes == launches, replay == eager.
    for (const bool pdl : {false, true}) {
      ctx.overlap = true;
      ctx.opts.pdl = pdl;
      std::vector<float> ones(kN, 1.0f);
      auto run_eager = [&] {
        b.memcpy_h2d(x.get(), ones.data(), x.bytes());
        b.memcpy_h2d(y.get(), ones.data(), y.bytes());
        ctx.begin_step();
        chain_launches(ctx, x.get(), y.get(), 10);
        std::vector<float> out(2 * kN);
        b.memcpy_d2h(out.data(), x.get(), x.bytes());
        b.memcpy_d2h(out.data() + kN, y.get(), y.bytes());
        return out;
      };
      const auto eager = run_eager();
      const std::size_t launched = ctx.step_log.size();
      b.memcpy_h2d(x.get(), ones.data(), x.bytes());
      b.memcpy_h2d(y.get(), ones.data(), y.bytes());
      Graph g;
      {
        CaptureGuard guard(b, ctx.compute);
        ctx.begin_step();
        chain_launches(ctx, x.get(), y.get(), 10);
        g = guard.finish();
      }
      CHECK_EQ(b.graph_node_count(g.get()), launched);
      CHECK_EQ(launched, std::size_t{12});
      GraphExec exec(b, b.instantiate(g.get()));
      b.graph_launch(exec.get(), ctx.compute);
      std::vector<float> out(2 * kN);
      b.memcpy_d2h(out.data(), x.get(), x.bytes());
      b.memcpy_d2h(out.data() + kN, y.get(), y.bytes());
      CHECK(out == eager);
      std::printf("fork/join capture pdl=%d: nodes=%zu launches=%zu identical=%d\n", pdl,
                  b.graph_node_count(g.get()), launched, out == eager);
    }

    // An unjoined fork: the side stream joined the capture and was never waited on again.
    {
      ctx.overlap = true;
      b.begin_capture(ctx.compute);
      launch<kernels::ChainKernel>(ctx, ctx.compute, kN, {x.get(), kN, 1.0f, 1.0f});
      ctx.fork();
      launch<kernels::ChainKernel>(ctx, ctx.side(), kN, {y.get(), kN, 1.0f, 1.0f});
      bool threw = false;
      try {
        b.graph_destroy(b.end_capture(ctx.compute));
      } catch (const RtError& e) {
        threw = e.errc() == Errc::CaptureFailed;
        std::printf("unjoined capture: %s\n", e.name().c_str());
      }
      CHECK(threw);
      CHECK(!b.is_capturing(ctx.compute));
      CHECK(!b.is_capturing(ctx.side()));
      ctx.overlap = false;
      chain_launches(ctx, x.get(), y.get(), 2);
      b.synchronize();
    }

    // The CaptureGuard path: something throws mid-capture, the guard ends and discards it.
    try {
      CaptureGuard guard(b, ctx.compute);
      chain_launches(ctx, x.get(), y.get(), 3);
      throw std::runtime_error("planted");
    } catch (const std::runtime_error&) {
    }
    CHECK(!b.is_capturing(ctx.compute));
    chain_launches(ctx, x.get(), y.get(), 2);
    b.synchronize();
  }
#endif
  return finish("cuda_backend_test");
}
