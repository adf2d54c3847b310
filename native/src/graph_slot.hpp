// One captured step graph and the rules around it: capture needs a fresh
// prepare and no live graph — destroy, prepare, capture, never over a live graph. Each refusal is
// an RtError(CaptureRefused) whose name says which rule: RECAPTURE_OVER_LIVE_GRAPH or
// CAPTURE_WITHOUT_PREPARE.
//
// prepare() runs one eager step from the reset state and keeps its launch count: the graph
// captured next must hold exactly that many kernel nodes (event record/wait add dependencies, not
// nodes, on every backend), plus the nodes of its collective calls (exactly one each on cpu, at
// least one each where NCCL makes them), else it is rejected. A capture failure is an answer, not an exception.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "context.hpp"
#include "graphrt/handles.hpp"
#include "workload.hpp"

namespace graphrt {

struct CaptureOutcome {
  bool ok = false;
  std::size_t nodes = 0;
  std::size_t launches = 0;  // of the eager step the graph was checked against
  std::size_t collectives = 0;  // collective calls of that step (their nodes are in `nodes` too)
  double capture_ms = 0;
  double instantiate_ms = 0;
  std::string reason;  // when not ok
};

class GraphSlot {
 public:
  explicit GraphSlot(Backend& backend) : backend_(backend) {}

  // Resets the workload, runs the eager reference step, resets again. Refused over a live graph.
  void prepare(Context& ctx, Workload& w, std::uint64_t seed, const std::string& key);
  // The prepare of a caller that has just run eager steps from the reset state itself (the
  // identity gate's eager side): its first step is the reference step, counted as prepare()
  // counts its own. Refused over a live graph; the caller resets the workload before capture.
  void prepared_by(std::size_t launches, std::size_t collectives, const std::string& key);
  // Captures one run_step under a CaptureGuard. Refused without a fresh prepare or over a live
  // graph. The workload's host-side state moved during capture: reset before replaying.
  CaptureOutcome capture(Context& ctx, Workload& w);
  void replay(Context& ctx);
  void destroy();

  bool live() const { return static_cast<bool>(exec_); }
  std::size_t nodes() const { return nodes_; }
  // Kernel launches the live graph holds (its eager step's; nodes() adds the collectives' nodes).
  std::size_t launches() const { return launches_; }
  std::size_t collectives() const { return collectives_; }
  const std::string& key() const { return key_; }

 private:
  Backend& backend_;
  std::optional<std::size_t> prepared_launches_;
  std::size_t prepared_collectives_ = 0;
  std::string key_;
  GraphExec exec_;
  std::size_t nodes_ = 0;
  std::size_t launches_ = 0;
  std::size_t collectives_ = 0;
};

}  // namespace graphrt
