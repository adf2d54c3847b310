// Collectives between the ranks of one block (PROTOCOL.md "Multi-rank"). One Collective per rank
// process, made after the rendezvous (the barrier) and before hello:
//   cpu:  CpuCollective (cpu_collective.cpp) — the all-reduce is a host node on the CPU backend's
//         device stream that runs Rendezvous::all_reduce_sum; under capture it is a graph node.
//   cuda: NcclCollective (nccl_collective.cpp, only with GRAPHRT_WITH_NCCL) — ncclAllReduce on the
//         stream; NCCL's captured kernels become graph nodes. The unique id travels in the
//         rendezvous blob from rank 0.
// Both keep the Rendezvous for the host-side vote, so a capture decision is uniform across ranks.
//
// A peer that dies mid-collective must end this rank too, within a second, never a hang until the
// lease expires: on cpu a blocked read sees the socket close, but an NCCL kernel waiting for a
// dead peer spins on the GPU and nothing on the host returns. So while a request is served
// (busy()) a watchdog thread watches the rendezvous connections, which close when a peer process
// dies, and the library's asynchronous error; on either it tells the others (rank 0), aborts what
// is in flight (NCCL: ncclCommAbort, made for another thread while a collective is stuck) and
// exits RANK_LOST naming the rank. Between requests a peer's exit is no failure (ranks leave when
// their stdin closes); the next request meets the closed connection at once.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "graphrt/backend.hpp"
#include "graphrt/error.hpp"
#include "rendezvous.hpp"

namespace graphrt {

class Context;

class Collective {
 public:
  Collective(Backend& backend, std::unique_ptr<Rendezvous> rv) : backend_(backend), rv_(std::move(rv)) {}
  virtual ~Collective();
  Collective(const Collective&) = delete;
  Collective& operator=(const Collective&) = delete;

  int world() const { return rv_->world(); }
  int rank() const { return rv_->rank(); }

  // Enqueues an in-place sum over all ranks of `count` floats at device address `buf` on
  // `stream`: eager, in stream order; under capture, node(s) of the graph replayed each launch.
  virtual void all_reduce_sum(StreamRaw stream, float* buf, std::size_t count) = 0;
  // Graph nodes one captured call adds: exact where graphrt makes them (cpu: 1), none where the
  // library decides (NCCL: at least one).
  virtual std::optional<std::size_t> nodes_per_call() const = 0;

  // Host side, outside any capture, after the device is idle: every rank says whether its own
  // flag is set; returns the ranks that set it (the same list on every rank).
  std::vector<int> vote(bool mine);

  // A request in flight, for the watchdog: held by Session::handle for the whole request.
  class Busy {
   public:
    explicit Busy(Collective* c) : c_(c) {
      if (c_ != nullptr) c_->enter();
    }
    ~Busy() {
      if (c_ != nullptr) c_->leave();
    }
    Busy(Busy&& o) noexcept : c_(o.c_) { o.c_ = nullptr; }
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;
    Busy& operator=(Busy&&) = delete;

   private:
    Collective* c_;
  };
  [[nodiscard]] Busy busy() { return Busy(this); }

 protected:
  // A derived class calls start_watchdog() last in its constructor and stop_watchdog() first in
  // its destructor, so the thread never calls the hooks below on a half-made or half-gone object.
  void start_watchdog();
  void stop_watchdog() noexcept;
  // The library's asynchronous error, polled while busy (NCCL: ncclCommGetAsyncError).
  virtual std::optional<std::string> async_error() noexcept { return std::nullopt; }
  // Called once, from the watchdog, before the process exits: release a stuck collective.
  virtual void abort_in_flight() noexcept {}

  Backend& backend_;
  std::unique_ptr<Rendezvous> rv_;

 private:
  void enter();
  void leave();
  void watch();
  // Why this rank must end (and which rank was lost), or nothing; waits up to one period.
  std::optional<std::pair<int, RtError>> check_peers();

  std::mutex watch_mutex_;
  std::condition_variable watch_cv_;
  int busy_ = 0;                // requests in flight (guarded by watch_mutex_)
  std::uint64_t requests_ = 0;  // requests begun (guarded by watch_mutex_)
  bool stop_ = false;
  std::thread watchdog_;
};

struct CollectiveOptions {
  std::string rendezvous;  // socket path or tcp://HOST:PORT (PROTOCOL.md --rendezvous)
  RendezvousAuth auth;     // the attempt's secret; rank 0 over tcp: where it publishes HOST:PORT
  int world = 1;
  int rank = 0;
  int timeout_ms = 30000;
};

// True when this graphrt has a collective implementation for the backend (hello features).
bool collectives_available(const std::string& backend);
// Rendezvous (the barrier) then the backend's collective. Throws BackendUnavailable where the
// backend has none, RankLost when a rank does not come.
std::unique_ptr<Collective> connect_collective(Backend& backend, const CollectiveOptions& opts);

// The one all-reduce call of a workload: enqueues it and counts it in the step (ctx).
void all_reduce(Context& ctx, StreamRaw stream, float* buf, std::size_t count);

// A collective that fails on a device thread (the CPU backend's host node) or in the watchdog
// cannot throw to the request: the process reports it and exits with its code (RANK_LOST: 7), so
// the gang fails fast. The first caller reports; a second one (the other thread noticing the same
// death) waits for the exit, so one error line is written.
using CollectiveFatal = void (*)(const RtError&);
void set_collective_fatal(CollectiveFatal handler);
[[noreturn]] void collective_fatal(const RtError& e) noexcept;

namespace detail {
std::unique_ptr<Collective> make_cpu_collective(Backend& backend, std::unique_ptr<Rendezvous> rv);
#if defined(GRAPHRT_WITH_NCCL)
RendezvousBlob nccl_unique_id_blob();
std::unique_ptr<Collective> make_nccl_collective(Backend& backend, std::unique_ptr<Rendezvous> rv);
#endif
}  // namespace detail

}  // namespace graphrt
