// The resident state of one graphrt process (one rank): the backend, the context, and a cache of
// workloads with their graphs, one per capture key (capture_key: the workload, its params and
// every toggle but `graph`), kept warm across requests for the life of the process. Interleaved
// arms (A B B A ...) each find their own buffers and instantiated graph: a rep re-captures only
// when its arm has none yet (or its capture failed); the identity gate always captures afresh.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
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
#include "workloads/decode.hpp"

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

// How a session keys and keeps its workloads and graphs. The defaults are graphrt's; tests plant
// bugs through `key` (a key that omits a toggle) and `verify_reuse`.
struct SessionOptions {
  // Cached workloads (each with its graph) at most; the least recently used goes first. Eager and
  // graph arms of the same toggles share one entry (the key omits `graph`).
  std::size_t max_cached = 16;
  std::function<std::string(const Request&)> key = capture_key;
  // A cache hit must be for the request the entry was made for (workload, params, every toggle
  // but graph, compared field by field, independently of the key): else INTERNAL, never a replay
  // of another arm's graph. Off only to show what a bad key would do without it.
  bool verify_reuse = true;
  // Planted bug for tests (WeightShelf::plant_shared_write): decode arms with `overlap` write the
  // weights every arm of the process shares.
  bool plant_shared_write = false;
};

class Session {
 public:
  explicit Session(std::unique_ptr<Backend> backend, RankSetup ranks = {}, SessionOptions options = {});
  ~Session();

  const DeviceInfo& info() const { return info_; }
  Shard shard() const { return shard_; }
  Backend& backend() { return *backend_; }
  // The read-only weights the session's workloads share (tests read their digests).
  const WeightShelf& shelf() const { return shelf_; }

  // Answers one request with lines on `emit`; the last one has "final":true unless the request
  // is a run-mode identity gate that failed (then the caller adds the GATE_FAILED error line).
  // Returns the gate outcome for identity requests. Throws RtError for bad input and device
  // errors (the caller answers them).
  std::optional<GateOutcome> handle(const Request& req, const Emit& emit, bool gate_is_final = true);

 private:
  // One cache entry: the workload made for `made_for` and the graph captured from it (the slot is
  // declared last so it goes first: no graph outlives the buffers it names).
  struct Entry {
    Request made_for;
    std::unique_ptr<Workload> workload;
    std::unique_ptr<GraphSlot> slot;
    // The seed the live graph was captured under: its weights' addresses are that seed's (the
    // shelf's set), so a request of another seed captures again rather than replay it.
    std::optional<std::uint64_t> graph_seed;
    std::uint64_t last_used = 0;
  };
  enum class GraphUse { Eager, Fresh, Reused };

  Entry& entry_for(const Request& req);
  // Capture when the graph toggle asks and the entry has no live graph (always when `fresh`).
  // `eager`: eager steps just run from the reset state (the identity gate's), whose first step
  // stands for the prepare's reference step.
  GraphUse ensure_graph(Entry& e, const Request& req, const Emit& emit, bool fresh, const StepRun* eager = nullptr);
  std::vector<std::string> unsupported(const Request& req, const Workload& w) const;
  void answer_rep(const Request& req, const Emit& emit);
  GateOutcome answer_identity(const Request& req, const Emit& emit, bool final);

  std::unique_ptr<Backend> backend_;
  DeviceInfo info_;
  std::unique_ptr<Collective> comm_;
  Shard shard_;
  bool plant_lazy_init_ = false;
  std::unique_ptr<Context> ctx_;
  SessionOptions options_;
  WeightShelf shelf_;  // before cache_: outlives every workload that names it
  std::map<std::string, Entry> cache_;
  std::uint64_t uses_ = 0;
};

}  // namespace graphrt
