// Collectives between the ranks of one block (PROTOCOL.md "Multi-rank"). One Collective per rank
// process, made after the rendezvous (the barrier) and before hello:
//   cpu:  CpuCollective (cpu_collective.cpp) — the all-reduce is a host node on the CPU backend's
//         device stream that runs Rendezvous::all_reduce_sum; under capture it is a graph node.
//   cuda: NcclCollective (nccl_collective.cpp, only with GRAPHRT_WITH_NCCL) — ncclAllReduce on the
//         stream; NCCL's captured kernels become graph nodes. The unique id travels in the
//         rendezvous blob from rank 0.
// Both keep the Rendezvous for the host-side vote, so a capture decision is uniform across ranks.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graphrt/backend.hpp"
#include "graphrt/error.hpp"
#include "rendezvous.hpp"

namespace graphrt {

class Context;

class Collective {
 public:
  Collective(Backend& backend, std::unique_ptr<Rendezvous> rv) : backend_(backend), rv_(std::move(rv)) {}
  virtual ~Collective() = default;
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

 protected:
  Backend& backend_;
  std::unique_ptr<Rendezvous> rv_;
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

// A collective that fails on a device thread (the CPU backend's host node) cannot throw to the
// request: the process reports it and exits with its code (RANK_LOST: 7), so the gang fails fast.
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
