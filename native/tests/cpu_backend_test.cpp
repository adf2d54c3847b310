// The CPU backend emulates what CUDA does around capture: allocation and synchronous copies are
// refused during capture and invalidate it; the CaptureGuard cleans up; a fork/join over events
// joins the side stream into the capture, an unjoined fork is refused; arguments are frozen at
// launch; a graph replay is one queue item; events time on the device thread.
#include <cstring>

#include "harness.hpp"

using namespace graphrt;
using namespace graphrt::test;
namespace k = graphrt::kernels;

namespace {

bool throws_capture_failed(const std::function<void()>& call) {
  try {
    call();
  } catch (const RtError& e) {
    return e.errc() == Errc::CaptureFailed;
  }
  return false;
}

void add(Backend& b, StreamRaw s, DeviceBuffer<float>& x, float a, float c) {
  k::ChainKernel::Args args{x.get(), static_cast<std::uint32_t>(x.size()), a, c};
  b.launch(s, KernelId::Chain, {1, 1, 1}, {static_cast<std::uint32_t>(x.size()), 1, 1}, &args, sizeof args, {});
}

float read0(Backend& b, DeviceBuffer<float>& x) {
  float v = 0;
  b.memcpy_d2h(&v, x.get(), sizeof v);
  return v;
}

}  // namespace

int main() {
  auto owned = make_cpu_backend();
  Backend& b = *owned;
  const StreamRaw s = b.compute_stream();
  {
    DeviceBuffer<float> x(b, 4);
    b.memset(x.get(), 0, x.bytes());

    // Allocation inside a capture: refused, the capture is invalidated, the guard cleans up.
    CHECK(throws_capture_failed([&] {
      CaptureGuard guard(b, s);
      add(b, s, x, 1, 1);
      DeviceBuffer<float> late(b, 4);
    }));
    CHECK(!b.is_capturing(s));
    // ... and a finished capture that saw an illegal operation fails at end_capture.
    {
      CaptureGuard guard(b, s);
      float host = 0;
      CHECK(throws_capture_failed([&] { b.memcpy_h2d(x.get(), &host, sizeof host); }));
      CHECK(throws_capture_failed([&] { guard.finish(); }));
    }
    CHECK(!b.is_capturing(s));

    // Arguments are frozen at launch: changing the host struct afterwards changes nothing.
    Graph g;
    {
      CaptureGuard guard(b, s);
      k::ChainKernel::Args args{x.get(), 4, 1.0f, 2.0f};
      b.launch(s, KernelId::Chain, {1, 1, 1}, {4, 1, 1}, &args, sizeof args, {});
      args.b = 1000.0f;
      g = guard.finish();
    }
    CHECK_EQ(b.graph_node_count(g.get()), std::size_t{1});
    GraphExec exec(b, b.instantiate(g.get()));
    g.reset();  // the exec outlives its graph, as in CUDA
    b.graph_launch(exec.get(), s);
    b.graph_launch(exec.get(), s);
    CHECK_EQ(read0(b, x), 4.0f);

    // Fork/join over events: the side stream joins the capture; its launch is a node.
    Stream side = make_stream(b);
    Event fork = make_event(b), join = make_event(b);
    {
      CaptureGuard guard(b, s);
      add(b, s, x, 2.0f, 0.0f);  // x = 2x
      b.event_record(fork.get(), s);
      b.stream_wait_event(side.get(), fork.get());
      CHECK(b.is_capturing(side.get()));
      add(b, side.get(), x, 1.0f, 1.0f);  // x = x + 1, after the doubling
      b.event_record(join.get(), side.get());
      b.stream_wait_event(s, join.get());
      add(b, s, x, 1.0f, 10.0f);  // x = x + 10, after the side
      Graph fj = guard.finish();
      CHECK_EQ(b.graph_node_count(fj.get()), std::size_t{3});
      CHECK(!b.is_capturing(side.get()));
      GraphExec fx(b, b.instantiate(fj.get()));
      b.graph_launch(fx.get(), s);
      CHECK_EQ(read0(b, x), 4.0f * 2 + 1 + 10);
    }
    // Unjoined: the side stream forked but the origin never waited on it.
    CHECK(throws_capture_failed([&] {
      CaptureGuard guard(b, s);
      b.event_record(fork.get(), s);
      b.stream_wait_event(side.get(), fork.get());
      add(b, side.get(), x, 1.0f, 1.0f);
      guard.finish();
    }));
    CHECK(!b.is_capturing(side.get()));

    // An event whose last record was inside an ended capture cannot be waited on.
    bool isolated = false;
    try {
      b.stream_wait_event(s, join.get());
    } catch (const RtError& e) {
      isolated = e.name() == "StreamCaptureIsolation";
    }
    CHECK(isolated);

    // Eager fork/join across device threads orders the work.
    b.memset(x.get(), 0, x.bytes());
    add(b, s, x, 1.0f, 3.0f);
    b.event_record(fork.get(), s);
    b.stream_wait_event(side.get(), fork.get());
    add(b, side.get(), x, 2.0f, 0.0f);
    b.event_record(join.get(), side.get());
    b.stream_wait_event(s, join.get());
    add(b, s, x, 1.0f, 1.0f);
    CHECK_EQ(read0(b, x), 7.0f);

    // Events measure time on the device: a long queue takes longer than an empty one.
    Event e0 = make_event(b), e1 = make_event(b);
    b.event_record(e0.get(), s);
    b.event_record(e1.get(), s);
    const float empty = b.event_elapsed_ms(e0.get(), e1.get());
    DeviceBuffer<float> big(b, 1 << 16);
    b.event_record(e0.get(), s);
    for (int i = 0; i < 50; ++i) {
      k::ChainKernel::Args args{big.get(), 1 << 16, 1.0f, 1.0f};
      b.launch(s, KernelId::Chain, {1024, 1, 1}, {64, 1, 1}, &args, sizeof args, {});
    }
    b.event_record(e1.get(), s);
    const float busy = b.event_elapsed_ms(e0.get(), e1.get());
    CHECK(empty >= 0.0f && busy > empty);

    // A wrong args size is refused before anything is queued.
    bool refused = false;
    try {
      k::ChainKernel::Args args{x.get(), 4, 1, 1};
      b.launch(s, KernelId::Matvec, {1, 1, 1}, {4, 1, 1}, &args, sizeof args, {});
    } catch (const RtError& e) {
      refused = e.errc() == Errc::InvalidValue;
    }
    CHECK(refused);
  }
  return finish("cpu_backend_test");
}
