// Re-capturing is destroy, prepare, capture: capture (or prepare) over a live graph and capture
// without a fresh prepare are refused by name; after destroy + prepare the new capture replays
// correctly. A resident session re-captures when the capture key changes.
#include <functional>

#include "graph_slot.hpp"
#include "harness.hpp"
#include "steps.hpp"

using namespace graphrt;
using namespace graphrt::test;

namespace {

std::string refusal(const std::function<void()>& call) {
  try {
    call();
  } catch (const RtError& e) {
    CHECK(e.errc() == Errc::CaptureRefused);
    return e.name();
  }
  return "accepted";
}

}  // namespace

int main() {
  auto backend = make_cpu_backend();
  {
    Context ctx(*backend);
    Request r = decode_request();
    auto w = make_workload(*backend, r);
    GraphSlot slot(*backend);
    CHECK_EQ(refusal([&] { slot.capture(ctx, *w); }), std::string("CAPTURE_WITHOUT_PREPARE"));
    slot.prepare(ctx, *w, 1, "k");
    CHECK(slot.capture(ctx, *w).ok);
    CHECK_EQ(refusal([&] { slot.capture(ctx, *w); }), std::string("RECAPTURE_OVER_LIVE_GRAPH"));
    CHECK_EQ(refusal([&] { slot.prepare(ctx, *w, 1, "k"); }), std::string("RECAPTURE_OVER_LIVE_GRAPH"));
    slot.destroy();
    CHECK_EQ(refusal([&] { slot.capture(ctx, *w); }), std::string("CAPTURE_WITHOUT_PREPARE"));
    slot.prepare(ctx, *w, 1, "k");
    CHECK(slot.capture(ctx, *w).ok);
    // One prepare is good for one capture only.
    slot.destroy();
    CHECK_EQ(refusal([&] { slot.capture(ctx, *w); }), std::string("CAPTURE_WITHOUT_PREPARE"));
    slot.prepare(ctx, *w, 1, "k");
    CHECK(slot.capture(ctx, *w).ok);
    w->reset(1);
    const auto eager = run_steps(ctx, *w, nullptr, 0, 4).hashes;
    w->reset(1);
    CHECK(run_steps(ctx, *w, &slot, 0, 4).hashes == eager);
  }

  // Session: same key reuses the graph (no capture line), a new key re-captures.
  Session s(std::move(backend));
  Request a = decode_request();
  a.toggles.graph = true;
  CHECK(of_type(ask(s, a), "capture").find("ok") != nullptr);
  CHECK(of_type(ask(s, a), "capture").kind == json::Value::Kind::Null);
  Request b = a;
  b.toggles.split_combine = true;
  const auto lines = ask(s, b);
  CHECK(boolean(of_type(lines, "capture"), "ok"));
  CHECK_EQ(number(of_type(lines, "rep"), "nodes"), double(3 + 2 * 11));
  return finish("recapture_test");
}
