#include "collective.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "context.hpp"

namespace graphrt {
namespace {

std::atomic<CollectiveFatal> fatal_handler{nullptr};
std::atomic<bool> fatal_claimed{false};

using std::chrono::milliseconds;
// How long the watchdog waits for a hang-up per look: a death is noticed within one period.
constexpr milliseconds kWatchPeriod{50};
// A peer that ends its last collective and exits normally (run mode) hangs up too, while this
// rank may still be finishing the same request; only a request still in flight after the grace
// can be waiting for it.
constexpr milliseconds kHangUpGrace{100};
// ncclCommAbort is meant to return promptly; if it does not, the process exits anyway.
constexpr milliseconds kAbortDeadline{500};

std::string rank_text(int rank) { return "rank " + std::to_string(rank); }

}  // namespace

Collective::~Collective() { stop_watchdog(); }

void Collective::start_watchdog() { watchdog_ = std::thread([this] { watch(); }); }

void Collective::stop_watchdog() noexcept {
  {
    std::lock_guard lock(watch_mutex_);
    stop_ = true;
  }
  watch_cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

void Collective::enter() {
  {
    std::lock_guard lock(watch_mutex_);
    ++busy_;
    ++requests_;
  }
  watch_cv_.notify_all();
}

void Collective::leave() {
  std::lock_guard lock(watch_mutex_);
  --busy_;
}

std::optional<std::pair<int, RtError>> Collective::check_peers() {
  const std::string me = rank_text(rank());
  if (const auto e = async_error())
    return std::pair{-1, RtError(Errc::RankLost, "RANK_LOST", me + ": the collective failed: " + *e + " (a peer rank is gone)")};
  const auto peer = rv_->hung_up_peer(kWatchPeriod);
  if (!peer) return std::nullopt;
  auto told = [&]() -> std::optional<std::pair<int, RtError>> {
    if (const auto lost = rv_->abort_notice())
      return std::pair{*lost, RtError(Errc::RankLost, "RANK_LOST",
                                      me + ": the gang lost " + rank_text(*lost) + " (rank 0 saw its connection close)")};
    return std::nullopt;
  };
  if (auto t = told()) return t;
  std::unique_lock lock(watch_mutex_);
  const std::uint64_t request = requests_;
  if (watch_cv_.wait_for(lock, kHangUpGrace, [&] { return stop_ || busy_ == 0 || requests_ != request; }))
    return std::nullopt;  // the request ended: the peer's exit kept no collective waiting
  lock.unlock();
  if (auto t = told()) return t;
  return std::pair{*peer, RtError(Errc::RankLost, "RANK_LOST",
                                  me + ": " + rank_text(*peer) + " closed its connection (it exited or was killed)")};
}

void Collective::watch() {
  std::unique_lock lock(watch_mutex_);
  for (;;) {
    watch_cv_.wait(lock, [&] { return stop_ || busy_ > 0; });
    if (stop_) return;
    lock.unlock();
    auto why = check_peers();
    lock.lock();
    if (!why || stop_ || busy_ == 0) {
      // A hang-up that ended no request: wait for the next request (the hang-up stays visible).
      if (why) watch_cv_.wait(lock, [&] { return stop_ || busy_ == 0; });
      continue;
    }
    lock.unlock();
    const RtError e = why->second;
    // The main thread may hold the rendezvous inside an all-reduce; it frees it within the rep.
    // Without the abort, every peer would see rank 0 go and name it as the rank lost.
    if (rank() == 0 && why->first > 0) rv_->tell_lost(why->first, kAbortDeadline - kWatchPeriod);
    // The abort may itself wait on what is stuck: past the deadline the process exits regardless.
    std::thread([e] {
      std::this_thread::sleep_for(kAbortDeadline);
      collective_fatal(e);
    }).detach();
    abort_in_flight();
    collective_fatal(e);
  }
}

std::vector<int> Collective::vote(bool mine) {
  backend_.synchronize();  // the device threads' collectives come first, in the same order on every rank
  std::vector<float> flags(static_cast<std::size_t>(world()), 0.0f);
  flags[static_cast<std::size_t>(rank())] = mine ? 1.0f : 0.0f;
  rv_->all_reduce_sum(flags.data(), flags.size());
  std::vector<int> set;
  for (std::size_t r = 0; r < flags.size(); ++r)
    if (flags[r] != 0.0f) set.push_back(static_cast<int>(r));
  return set;
}

bool collectives_available(const std::string& backend) {
  if (backend == "cpu") return true;
#if defined(GRAPHRT_WITH_NCCL)
  if (backend == "cuda") return true;
#endif
  return false;
}

std::unique_ptr<Collective> connect_collective(Backend& backend, const CollectiveOptions& opts) {
  const std::string name = backend.info().backend;
  if (!collectives_available(name))
    throw RtError(Errc::BackendUnavailable, "BACKEND_UNAVAILABLE",
                  "--world " + std::to_string(opts.world) + " needs collectives, which backend \"" + name +
                      "\" of this graphrt lacks (the cuda backend has them when built where nccl.h is found: "
                      "configure with -DGRAPHRT_NCCL=ON); use --backend cpu");
  RendezvousBlob blob{};
#if defined(GRAPHRT_WITH_NCCL)
  if (name == "cuda" && opts.rank == 0) blob = detail::nccl_unique_id_blob();
#endif
  auto rv = std::make_unique<Rendezvous>(opts.rendezvous, opts.world, opts.rank,
                                         std::chrono::milliseconds(opts.timeout_ms), blob, opts.auth);
#if defined(GRAPHRT_WITH_NCCL)
  if (name == "cuda") return detail::make_nccl_collective(backend, std::move(rv));
#endif
  return detail::make_cpu_collective(backend, std::move(rv));
}

void all_reduce(Context& ctx, StreamRaw stream, float* buf, std::size_t count) {
  RT_CHECK(ctx.comm != nullptr, Errc::Internal, "", "all_reduce without a collective (world 1)");
  ctx.comm->all_reduce_sum(stream, buf, count);
  ++ctx.step_collectives;
}

void set_collective_fatal(CollectiveFatal handler) { fatal_handler.store(handler); }

void collective_fatal(const RtError& e) noexcept {
  if (fatal_claimed.exchange(true))
    for (;;) ::pause();  // another thread is reporting and exiting
  if (const CollectiveFatal h = fatal_handler.load()) {
    h(e);
  } else {
    std::fprintf(stderr, "graphrt: %s: %s\n", protocol_code(e.errc()), e.what());
  }
  std::fflush(nullptr);
  std::_Exit(exit_code(e.errc()));
}

}  // namespace graphrt
