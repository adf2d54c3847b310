#include "session.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <type_traits>

#include "kernel_trace.hpp"
#include "probe.hpp"

namespace graphrt {

namespace {

// Field by field through the object representation: any field added to Params or Toggles is
// compared too (the asserts refuse padding, whose bytes would be unspecified).
template <class T>
bool same_fields(const T& a, const T& b) {
  static_assert(std::is_trivially_copyable_v<T> && std::has_unique_object_representations_v<T>);
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Whether a graph captured (and a workload made) for `made` may serve `req`: everything but the
// graph toggle (eager and graph arms share the workload; only graph arms replay).
bool same_arm(const Request& made, const Request& req) {
  Toggles a = made.toggles, b = req.toggles;
  a.graph = b.graph = false;
  return made.workload == req.workload && same_fields(made.params, req.params) && same_fields(a, b);
}

std::string arm_text(const Request& r) {
  std::string t = r.workload;
  for (const auto& on : toggles_on(r.toggles)) t += "+" + on;
  return t + " (" + capture_key(r) + ")";
}

}  // namespace

Session::Session(std::unique_ptr<Backend> backend, RankSetup ranks, SessionOptions options)
    : backend_(std::move(backend)),
      info_(backend_->info()),
      comm_(std::move(ranks.comm)),
      plant_lazy_init_(ranks.plant_lazy_init),
      ctx_(std::make_unique<Context>(*backend_)),
      options_(std::move(options)) {
  info_.features.collectives = collectives_available(info_.backend);
  shelf_.plant_shared_write = options_.plant_shared_write;
  if (comm_) shard_ = Shard{comm_->rank(), comm_->world()};
  ctx_->comm = comm_.get();
}

Session::~Session() {
  // Graph, workload buffers, events and streams go before the backend that owns their memory;
  // the communicator too (NCCL's needs the device context).
  cache_.clear();
  ctx_.reset();
  comm_.reset();
}

Session::Entry& Session::entry_for(const Request& req) {
  const std::string key = options_.key(req);
  auto it = cache_.find(key);
  if (it != cache_.end() && options_.verify_reuse && !same_arm(it->second.made_for, req))
    RT_THROW(Errc::Internal, "", "capture key \"" + key + "\" was made for " + arm_text(it->second.made_for) +
                                     " and now asked for " + arm_text(req) +
                                     ": a graph is never replayed for another arm");
  if (it == cache_.end()) {
    // Evict the least recently used entries first (ranks send the same requests in the same
    // order, so every rank evicts the same ones).
    while (!cache_.empty() && cache_.size() >= std::max<std::size_t>(1, options_.max_cached)) {
      auto lru = std::min_element(cache_.begin(), cache_.end(),
                                  [](const auto& a, const auto& b) { return a.second.last_used < b.second.last_used; });
      cache_.erase(lru);
    }
    Request as_made = req;
    if (plant_lazy_init_) as_made.toggles.lazy_init = true;
    Entry e;
    e.made_for = req;
    e.workload = make_workload(*backend_, as_made, shard_, &shelf_);
    e.slot = std::make_unique<GraphSlot>(*backend_);
    it = cache_.emplace(key, std::move(e)).first;
  }
  it->second.last_used = ++uses_;
  ctx_->opts.pdl = req.toggles.pdl && info_.features.pdl;
  ctx_->overlap = req.toggles.overlap && info_.features.overlap;
  return it->second;
}

Session::GraphUse Session::ensure_graph(Entry& e, const Request& req, const Emit& emit, bool fresh, const StepRun* eager) {
  if (!req.toggles.graph || !info_.features.graph) return GraphUse::Eager;
  GraphSlot& slot = *e.slot;
  if (slot.live() && !fresh && e.graph_seed == req.seed) return GraphUse::Reused;
  slot.destroy();
  e.graph_seed.reset();
  if (eager != nullptr) {
    // The gate's eager step 1 ran from the reset state as prepare()'s own step would (the same
    // launches, collectives and lazy set-up before capture): one eager step per gate saved.
    slot.prepared_by(eager->first_launches, eager->first_collectives, options_.key(req));
    e.workload->reset(req.seed);
  } else {
    slot.prepare(*ctx_, *e.workload, req.seed, options_.key(req));
  }
  CaptureOutcome c = slot.capture(*ctx_, *e.workload);
  std::vector<int> failed_ranks;
  if (comm_) {
    // Capture is uniform across ranks (a graph with collectives replays only together): a failure
    // on any rank sends every rank to eager.
    failed_ranks = comm_->vote(!c.ok);
    if (c.ok && !failed_ranks.empty()) {
      slot.destroy();
      c.ok = false;
      std::string which;
      for (int r : failed_ranks) which += (which.empty() ? "" : ", ") + std::to_string(r);
      c.reason = "capture failed on rank(s) " + which + "; every rank runs eager";
    }
  }
  if (c.ok) e.graph_seed = req.seed;
  emit(capture_line(req, c, comm_ ? std::optional<std::vector<int>>(failed_ranks) : std::nullopt));
  return c.ok ? GraphUse::Fresh : GraphUse::Eager;
}

std::vector<std::string> Session::unsupported(const Request& req, const Workload& w) const {
  std::vector<std::string> inert = w.inert_toggles();
  auto add = [&](bool on, bool supported, const char* name) {
    if (on && !supported) inert.emplace_back(name);
  };
  add(req.toggles.graph, info_.features.graph, "graph");
  add(req.toggles.pdl, info_.features.pdl, "pdl");
  add(req.toggles.overlap, info_.features.overlap, "overlap");
  std::vector<std::string> out;  // protocol order, no duplicates
  for (const auto& t : toggle_names())
    if (std::find(inert.begin(), inert.end(), t) != inert.end()) out.push_back(t);
  return out;
}

// The rank's monotonic clock (steady_clock: CLOCK_MONOTONIC on Linux) in ns: a rep's start and end
// on it let the worker's turnaround between reps and the card's busy share be computed from the
// lines alone, without trusting any wall clock.
static std::uint64_t monotonic_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

void Session::answer_rep(const Request& req, const Emit& emit) {
  const std::uint64_t t_start = monotonic_ns();
  Entry& e = entry_for(req);
  Workload& w = *e.workload;
  const GraphUse use = ensure_graph(e, req, emit, false);
  const bool graph = use != GraphUse::Eager;
  // Every graph rep settles the launch state first (steps.hpp: settle_launch_state), so its
  // replays meet the same launch state whatever arm ran before it in the block.
  std::optional<double> settle_ms;
  if (graph) settle_ms = settle_launch_state(*ctx_, w, req.seed);
  else w.reset(req.seed);
  const auto clocks_start = backend_->read_clocks();
  const auto ecc_start = backend_->read_ecc_errors();
  KernelTrace trace;
  trace.drain();
  const StepRun run = run_steps(*ctx_, w, graph ? e.slot.get() : nullptr, req.warmup, req.steps);
  const std::optional<double> kernel_busy_ns = trace.busy_ns_per_kernel();
  const auto clocks_end = backend_->read_clocks();
  const auto ecc = ecc_during(ecc_start, backend_->read_ecc_errors());
  const std::uint64_t t_end = monotonic_ns();
  json::Obj o = line("rep", req.id);
  o.put("arm", req.arm)
      .put("workload", req.workload)
      .put("backend", info_.backend)
      .put("mode", graph ? "graph" : "eager")
      .put("warmup", req.warmup)
      .put("steps", req.steps)
      .put("step_ms", run.step_ms)
      .put("warmup_ms", run.warmup_ms)
      .put("launches_per_step", run.launches)
      .put("dispatches_per_step", run.dispatches)
      .put("collectives_per_step", run.collectives)
      .put("rank", shard_.rank)
      .put("world", shard_.world);
  if (graph) o.put("nodes", static_cast<std::uint64_t>(e.slot->nodes()));
  else o.put_null("nodes");
  if (graph) o.put("graph", use == GraphUse::Fresh ? "fresh" : "reused");
  else o.put_null("graph");
  if (settle_ms) o.put("settle_ms", *settle_ms);
  else o.put_null("settle_ms");
  // only under orch's injection library in trace mode (kernel_trace.hpp): no other rep has it
  if (kernel_busy_ns) o.put("kernel_busy_ns", *kernel_busy_ns);
  o.put("hashes", run.hashes).put("unsupported", unsupported(req, w));
  o.put("t_start_ns", t_start).put("t_end_ns", t_end);
  if (const auto tr = w.train_report()) {
    json::Obj t;
    t.put("L", tr->launches).put("P", tr->pin_copies).put("win", tr->pin_copies + 1 < tr->launches);
    o.put_raw("train", t.str());
  }
  if (clocks_start && clocks_end) o.put_raw("clocks", clocks_json(*clocks_start, *clocks_end));
  if (ecc) o.put("ecc_errors", *ecc);
  o.put("final", true);
  emit(o.str());
}

GateOutcome Session::answer_identity(const Request& req, const Emit& emit, bool final) {
  const std::uint64_t t_start = monotonic_ns();
  Entry& e = entry_for(req);
  Workload& w = *e.workload;
  w.reset(req.seed);
  const StepRun eager = run_steps(*ctx_, w, nullptr, 0, req.replays);
  Request as_graph = req;
  as_graph.toggles.graph = true;
  const bool graph = ensure_graph(e, as_graph, emit, true, &eager) != GraphUse::Eager;
  w.reset(req.seed);
  const StepRun replayed = run_steps(*ctx_, w, graph ? e.slot.get() : nullptr, 0, req.replays);
  const std::uint64_t t_end = monotonic_ns();
  GateOutcome g;
  if (const std::size_t bad = first_difference(eager.hashes, replayed.hashes)) g.first_bad_replay = bad;
  g.pass = !g.first_bad_replay;
  json::Obj o = line("gate", req.id);
  o.put("arm", req.arm)
      .put("name", "identity")
      .put("pass", g.pass)
      .put("mode", graph ? "graph" : "eager")
      .put("replays", req.replays);
  if (g.first_bad_replay) o.put("first_bad_replay", static_cast<std::uint64_t>(*g.first_bad_replay));
  else o.put_null("first_bad_replay");
  o.put("eager_hashes", eager.hashes).put("graph_hashes", replayed.hashes);
  if (graph) o.put("nodes", static_cast<std::uint64_t>(e.slot->nodes()));
  else o.put_null("nodes");
  o.put("launches_per_step", eager.launches)
      .put("collectives_per_step", eager.collectives)
      .put("rank", shard_.rank)
      .put("world", shard_.world)
      .put("t_start_ns", t_start)
      .put("t_end_ns", t_end);
  if (final || g.pass) o.put("final", true);
  emit(o.str());
  return g;
}

std::optional<GateOutcome> Session::handle(const Request& req, const Emit& emit, bool gate_is_final) {
  // While it is held, a peer's death ends this rank (the collective's watchdog), never a hang.
  const Collective::Busy busy = comm_ ? comm_->busy() : Collective::Busy(nullptr);
  switch (req.op) {
    case Op::Hello:
      emit(hello_line(info_, shard_, req.id, true));
      return std::nullopt;
    case Op::Probe:
      run_probes(*backend_, req, emit);
      return std::nullopt;
    case Op::Identity: {
      return answer_identity(req, emit, gate_is_final);
    }
    case Op::Rep:
      answer_rep(req, emit);
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace graphrt
