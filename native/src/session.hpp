// The resident state of one graphrt process (one rank): the backend, the context, the current
// workload and its graph, kept warm across requests. A request whose capture key differs from
// the current one re-makes the workload (destroy the graph, prepare, capture).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collective/collective.hpp"
#include "context.hpp"
#include "graph_slot.hpp"
#include "graphrt/backend.hpp"
#include "lines.hpp"
#include "request.hpp"
#include "steps.hpp"
#include "workload.hpp"

namespace graphrt {

struct GateOutcome {
  bool pass = false;
  std::optional<std::size_t> first_bad_replay;  // 1-based
};

// Multi-rank settings of a session (PROTOCOL.md "Multi-rank").
struct RankSetup {
  std::unique_ptr<Collective> comm;  // null at world 1
  // A planted bug for the tests: this rank makes its workloads as if `lazy_init` were on (so its
  // captures fail and the vote sends every rank to eager). From GRAPHRT_PLANT_LAZY_INIT_RANK.
  bool plant_lazy_init = false;
};

class Session {
 public:
  explicit Session(std::unique_ptr<Backend> backend, RankSetup ranks = {});
  ~Session();

  const DeviceInfo& info() const { return info_; }
  Shard shard() const { return shard_; }
  Backend& backend() { return *backend_; }

  // Answers one request with lines on `emit`; the last one has "final":true unless the request
  // is a run-mode identity gate that failed (then the caller adds the GATE_FAILED error line).
  // Returns the gate outcome for identity requests. Throws RtError for bad input and device
  // errors (the caller answers them).
  std::optional<GateOutcome> handle(const Request& req, const Emit& emit, bool gate_is_final = true);

 private:
  Workload& workload_for(const Request& req);
  // Capture (when the graph toggle asks and none is live for this key); false means eager.
  bool ensure_graph(const Request& req, const Emit& emit, bool fresh);
  std::vector<std::string> unsupported(const Request& req, const Workload& w) const;
  void answer_rep(const Request& req, const Emit& emit);
  GateOutcome answer_identity(const Request& req, const Emit& emit, bool final);

  std::unique_ptr<Backend> backend_;
  DeviceInfo info_;
  std::unique_ptr<Collective> comm_;
  Shard shard_;
  bool plant_lazy_init_ = false;
  std::unique_ptr<Context> ctx_;
  std::string key_;
  std::unique_ptr<Workload> workload_;
  GraphSlot slot_;
};

}  // namespace graphrt
