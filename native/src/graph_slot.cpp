#include "graph_slot.hpp"

#include <chrono>

#include "collective/collective.hpp"

namespace graphrt {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void GraphSlot::prepare(Context& ctx, Workload& w, std::uint64_t seed, const std::string& key) {
  if (live())
    RT_THROW(Errc::CaptureRefused, "RECAPTURE_OVER_LIVE_GRAPH",
             "prepare over a live graph: destroy the old graph first (destroy, prepare, capture)");
  w.reset(seed);
  ctx.begin_step();
  w.run_step(ctx);
  ctx.backend.synchronize();
  prepared_launches_ = ctx.step_log.size();
  prepared_collectives_ = ctx.step_collectives;
  w.reset(seed);
  key_ = key;
}

void GraphSlot::prepared_by(std::size_t launches, std::size_t collectives, const std::string& key) {
  if (live())
    RT_THROW(Errc::CaptureRefused, "RECAPTURE_OVER_LIVE_GRAPH",
             "prepare over a live graph: destroy the old graph first (destroy, prepare, capture)");
  prepared_launches_ = launches;
  prepared_collectives_ = collectives;
  key_ = key;
}

CaptureOutcome GraphSlot::capture(Context& ctx, Workload& w) {
  if (live())
    RT_THROW(Errc::CaptureRefused, "RECAPTURE_OVER_LIVE_GRAPH",
             "capture over a live graph: destroy the old graph first (destroy, prepare, capture)");
  if (!prepared_launches_)
    RT_THROW(Errc::CaptureRefused, "CAPTURE_WITHOUT_PREPARE",
             "capture without a fresh prepare: call prepare() before every capture");
  CaptureOutcome out;
  out.launches = *prepared_launches_;
  prepared_launches_.reset();  // one prepare, one capture
  const auto t0 = std::chrono::steady_clock::now();
  Graph graph;
  try {
    CaptureGuard guard(backend_, ctx.compute);
    ctx.begin_step();
    w.run_step(ctx);
    graph = guard.finish();
  } catch (const RtError& e) {
    if (e.errc() != Errc::CaptureFailed) throw;
    out.reason = e.what();
    return out;
  }
  out.capture_ms = ms_since(t0);
  out.nodes = backend_.graph_node_count(graph.get());
  out.collectives = prepared_collectives_;
  const std::optional<std::size_t> per_call = ctx.comm != nullptr ? ctx.comm->nodes_per_call() : std::size_t{1};
  const std::size_t expected = out.launches + out.collectives * per_call.value_or(1);
  if (per_call ? out.nodes != expected : out.nodes < expected) {
    out.reason = "graph holds " + std::to_string(out.nodes) + " nodes but the eager step launched " +
                 std::to_string(out.launches) + " kernels" +
                 (out.collectives > 0 ? " and " + std::to_string(out.collectives) + " collectives" : std::string()) +
                 ": work escaped the capture";
    return out;
  }
  const auto t1 = std::chrono::steady_clock::now();
  exec_ = GraphExec(backend_, backend_.instantiate(graph.get()));
  out.instantiate_ms = ms_since(t1);
  nodes_ = out.nodes;
  launches_ = out.launches;
  collectives_ = out.collectives;
  out.ok = true;
  return out;
}

void GraphSlot::replay(Context& ctx) {
  RT_CHECK(live(), Errc::Internal, "", "replay without a live graph");
  ctx.replay(exec_.get());
}

void GraphSlot::destroy() {
  exec_.reset();
  nodes_ = 0;
  launches_ = 0;
  collectives_ = 0;
  key_.clear();
  prepared_launches_.reset();
}

}  // namespace graphrt
