// The launch counter is exact: every launch passes through the one helper, which counts it and
// logs it; the graph holds exactly the launches of the eager step; a replay adds one dispatch
// and no launch. The probe workload's five self-checks all pass.
#include "graph_slot.hpp"
#include "harness.hpp"
#include "probe.hpp"

using namespace graphrt;
using namespace graphrt::test;

int main() {
  auto backend = make_cpu_backend();
  {
    Context ctx(*backend);
    Request r;
    r.workload = "chain";
    r.params.kernels = 37;
    auto w = make_workload(*backend, r);
    w->reset(1);
    const std::uint64_t c0 = ctx.launches;
    ctx.begin_step();
    w->run_step(ctx);
    CHECK_EQ(ctx.launches - c0, std::uint64_t{37});
    CHECK_EQ(ctx.step_log.size(), std::size_t{37});

    Request d = decode_request();
    d.toggles.split_combine = true;
    auto dw = make_workload(*backend, d);
    dw->reset(1);
    ctx.begin_step();
    dw->run_step(ctx);
    CHECK_EQ(ctx.step_log.size(), std::size_t{3 + 2 * (10 + 1)});

    GraphSlot slot(*backend);
    slot.prepare(ctx, *w, 1, "chain");
    CHECK(slot.capture(ctx, *w).ok);
    CHECK_EQ(slot.nodes(), std::size_t{37});
    const std::uint64_t l1 = ctx.launches;
    const std::uint64_t d1 = ctx.dispatches;
    for (int i = 0; i < 5; ++i) slot.replay(ctx);
    backend->synchronize();
    CHECK_EQ(ctx.launches, l1);
    CHECK_EQ(ctx.dispatches - d1, std::uint64_t{5});
  }

  Request probe;
  probe.workload = "probe";
  probe.op = Op::Probe;
  probe.params.kernels = 16;
  probe.params.params = 3;
  probe.params.param_size = 50;
  std::vector<json::Value> lines;
  run_probes(*backend, probe, [&](const std::string& l) { lines.push_back(json::parse(l)); });
  CHECK_EQ(lines.size(), std::size_t{5});
  for (const auto& l : lines) {
    if (!boolean(l, "pass")) std::fprintf(stderr, "probe failed: %s\n", l.find("name")->text.c_str());
    CHECK(boolean(l, "pass"));
  }
  CHECK(boolean(lines.back(), "final"));
  return finish("launch_counter_test");
}
