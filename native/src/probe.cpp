#include "probe.hpp"

#include <chrono>
#include <functional>

#include "graph_slot.hpp"
#include "steps.hpp"
#include "workload.hpp"
#include "workloads/train.hpp"

namespace graphrt {
namespace {

struct ProbeResult {
  bool pass = false;
  json::Obj detail;
};

// What every probe starts from: its own context, a workload made from the probe request's sizes
// with only `pin` toggled, and an empty graph slot.
struct Rig {
  Rig(Backend& b, const Request& req, const char* workload, bool pin)
      : ctx(b), r(sub_request(req, workload, pin)), w(make_workload(b, r)), slot(b) {}
  static Request sub_request(const Request& req, const char* workload, bool pin) {
    Request r = req;
    r.workload = workload;
    r.toggles = Toggles{};
    r.toggles.pin = pin;
    return r;
  }
  Context ctx;
  Request r;
  std::unique_ptr<Workload> w;
  GraphSlot slot;
};

std::string address(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

// Captures a fresh graph of `w` into `slot`; throws when the capture fails (a probe bug).
CaptureOutcome capture_fresh(Context& ctx, Workload& w, GraphSlot& slot, std::uint64_t seed) {
  slot.destroy();
  slot.prepare(ctx, w, seed, "probe");
  const CaptureOutcome c = slot.capture(ctx, w);
  RT_CHECK(c.ok, Errc::Internal, "", "probe capture failed: " + c.reason);
  return c;
}

ProbeResult launch_counter(Backend& b, const Request& req) {
  Rig rig(b, req, "chain", false);
  auto& [ctx, r, w, slot] = rig;
  w->reset(r.seed);
  const std::uint64_t c0 = ctx.launches;
  ctx.begin_step();
  w->run_step(ctx);
  b.synchronize();
  const std::uint64_t counted = ctx.launches - c0;
  const CaptureOutcome captured = capture_fresh(ctx, *w, slot, r.seed);
  const std::uint64_t c1 = ctx.launches;
  const std::uint64_t d1 = ctx.dispatches;
  const int replays = 8;
  for (int i = 0; i < replays; ++i) slot.replay(ctx);
  b.synchronize();
  ProbeResult p;
  p.pass = counted == r.params.kernels && ctx.step_log.size() == r.params.kernels &&
           slot.nodes() == r.params.kernels && ctx.launches == c1 && ctx.dispatches - d1 == replays;
  p.detail.put("expected", static_cast<std::uint64_t>(r.params.kernels))
      .put("counted", counted)
      .put("graph_nodes", static_cast<std::uint64_t>(slot.nodes()))
      .put("replays", replays)
      .put("launches_during_replays", ctx.launches - c1)
      .put("dispatches_during_replays", ctx.dispatches - d1)
      .put("capture_ms", captured.capture_ms)
      .put("instantiate_ms", captured.instantiate_ms);
  return p;
}

ProbeResult unpinned_diverges(Backend& b, const Request& req) {
  Rig rig(b, req, "train", false);
  auto& [ctx, r, owned, slot] = rig;
  auto& w = static_cast<TrainWorkload&>(*owned);
  w.reset(r.seed);
  std::vector<std::string> addresses{address(w.param_address(0))};
  const StepRun oracle = run_steps(ctx, w, nullptr, 0, 3);  // the same steps without a graph
  w.reset(r.seed);
  for (int i = 0; i < 3; ++i) {  // where parameter 0 lives after each step
    ctx.begin_step();
    w.run_step(ctx);
    addresses.push_back(address(w.param_address(0)));
  }
  capture_fresh(ctx, w, slot, r.seed);
  w.reset(r.seed);
  const StepRun graph = run_steps(ctx, w, &slot, 0, 3);
  const std::size_t bad = first_difference(oracle.hashes, graph.hashes);
  ProbeResult p;
  p.pass = bad == 2 && addresses[0] != addresses[1] && addresses[0] == addresses[2];
  p.detail.put("first_bad_replay", static_cast<std::uint64_t>(bad))
      .put("eager_hashes", oracle.hashes)
      .put("graph_hashes", graph.hashes)
      .put("param0_addresses", addresses);
  return p;
}

// The refusal's name, or "accepted" when the call went through.
std::string refusal(const std::function<void()>& call) {
  try {
    call();
  } catch (const RtError& e) {
    if (e.errc() == Errc::CaptureRefused) return e.name();
    throw;
  }
  return "accepted";
}

ProbeResult recapture_refusals(Backend& b, const Request& req) {
  Rig rig(b, req, "chain", false);
  auto& [ctx, r, w, slot] = rig;
  capture_fresh(ctx, *w, slot, r.seed);
  const std::string over_live = refusal([&] { slot.capture(ctx, *w); });
  slot.destroy();
  const std::string unprepared = refusal([&] { slot.capture(ctx, *w); });
  slot.prepare(ctx, *w, r.seed, "probe");
  const CaptureOutcome again = slot.capture(ctx, *w);
  w->reset(r.seed);
  const StepRun eager = run_steps(ctx, *w, nullptr, 0, 3);
  w->reset(r.seed);
  const StepRun graph = again.ok ? run_steps(ctx, *w, &slot, 0, 3) : StepRun{};
  ProbeResult p;
  p.pass = over_live == "RECAPTURE_OVER_LIVE_GRAPH" && unprepared == "CAPTURE_WITHOUT_PREPARE" && again.ok &&
           first_difference(eager.hashes, graph.hashes) == 0;
  p.detail.put("capture_over_live_graph", over_live)
      .put("capture_without_prepare", unprepared)
      .put("destroy_prepare_capture", again.ok)
      .put("replays_match_eager", first_difference(eager.hashes, graph.hashes) == 0);
  return p;
}

ProbeResult pinned_exact(Backend& b, const Request& req) {
  Rig rig(b, req, "train", true);
  auto& [ctx, r, w, slot] = rig;
  w->reset(r.seed);
  const StepRun eager = run_steps(ctx, *w, nullptr, 0, 8);
  const TrainReport tr = *w->train_report();
  capture_fresh(ctx, *w, slot, r.seed);
  w->reset(r.seed);
  const StepRun graph = run_steps(ctx, *w, &slot, 0, 8);
  ProbeResult p;
  p.pass = first_difference(eager.hashes, graph.hashes) == 0 && tr.pin_copies == r.params.params;
  p.detail.put("steps", 8)
      .put("identical", first_difference(eager.hashes, graph.hashes) == 0)
      .put("params", static_cast<std::uint64_t>(r.params.params))
      .put("L", tr.launches)
      .put("P", tr.pin_copies)
      .put("win", tr.pin_copies + 1 < tr.launches);
  return p;
}

ProbeResult replay_dispatch(Backend& b, const Request& req) {
  using Clock = std::chrono::steady_clock;
  Rig rig(b, req, "chain", false);
  auto& [ctx, r, w, slot] = rig;
  const int steps = 8;
  w->reset(r.seed);
  const auto t0 = Clock::now();
  for (int i = 0; i < steps; ++i) {
    ctx.begin_step();
    w->run_step(ctx);
  }
  const double eager_host_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  b.synchronize();
  capture_fresh(ctx, *w, slot, r.seed);
  const std::uint64_t d0 = ctx.dispatches;
  const auto t1 = Clock::now();
  for (int i = 0; i < steps; ++i) slot.replay(ctx);
  const double replay_host_us = std::chrono::duration<double, std::micro>(Clock::now() - t1).count();
  b.synchronize();
  const std::uint64_t per_replay = (ctx.dispatches - d0) / steps;
  ProbeResult p;
  p.pass = per_replay == 1 && slot.nodes() == r.params.kernels;
  p.detail.put("launches_per_step", static_cast<std::uint64_t>(r.params.kernels))
      .put("dispatches_per_replay", per_replay)
      .put("host_us_per_launch", eager_host_us / (steps * static_cast<double>(r.params.kernels)))
      .put("host_us_per_replay", replay_host_us / steps);
  return p;
}

}  // namespace

void run_probes(Backend& backend, const Request& req, const Emit& emit) {
  using Fn = ProbeResult (*)(Backend&, const Request&);
  const std::pair<const char*, Fn> probes[] = {
      {"launch_counter", &launch_counter},         {"unpinned_diverges", &unpinned_diverges},
      {"recapture_refusals", &recapture_refusals}, {"pinned_exact", &pinned_exact},
      {"replay_dispatch", &replay_dispatch},
  };
  const std::size_t n = std::size(probes);
  for (std::size_t i = 0; i < n; ++i) {
    ProbeResult p;
    try {
      p = probes[i].second(backend, req);
    } catch (const RtError& e) {
      if (e.errc() == Errc::DeviceError) throw;
      p.pass = false;
      p.detail = json::Obj();
      p.detail.put("error", e.what());
    }
    json::Obj o = line("probe", req.id);
    o.put("name", probes[i].first).put("pass", p.pass).put_raw("detail", p.detail.str());
    if (i + 1 == n) o.put("final", true);
    emit(o.str());
  }
}

}  // namespace graphrt
