// The CUDA backend's collective (compiled only with GRAPHRT_WITH_NCCL, where CMake found nccl.h):
// one NCCL communicator per rank process (one GPU per process: CUDA_VISIBLE_DEVICES is the leased
// card, so the backend's current device is the rank's), made with ncclCommInitRank from the
// unique id rank 0 created with ncclGetUniqueId and sent in the rendezvous blob.
//
// all_reduce_sum is ncclAllReduce in place on the rank's stream. Under stream capture NCCL
// records its kernels into the graph (NCCL >= 2.9, CUDA >= 11.3; global capture mode is
// compatible with one GPU per process). Whether an NCCL call is captured must be the same on
// every rank; the session's vote keeps it so. NCCL connects lazily on the first call of a shape,
// which is why every capture follows an eager prepare step (graph_slot.cpp).
//
// A dead peer leaves NCCL's kernel spinning on the GPU: the watchdog (collective.hpp) notices the
// peer's rendezvous connection close or NCCL's asynchronous error and calls ncclCommAbort from its
// own thread, which NCCL allows while a collective is in flight (the kernel sees the abort flag).
#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <cstring>

#include "collective.hpp"

// The NCCL member of the check-macro family: expression, file:line, NCCL's error name.
// A peer that is gone shows up as a remote or system error: RankLost (exit 7), like the CPU path.
#define RT_NCCL_CHECK(expr)                                                                          \
  do {                                                                                               \
    const ncclResult_t rt_nccl_r_ = (expr);                                                          \
    if (rt_nccl_r_ != ncclSuccess)                                                                   \
      ::graphrt::rt_raise(rt_nccl_r_ == ncclRemoteError || rt_nccl_r_ == ncclSystemError             \
                              ? ::graphrt::Errc::RankLost                                            \
                              : ::graphrt::Errc::DeviceError,                                        \
                          ncclGetErrorString(rt_nccl_r_), #expr, __FILE__, __LINE__, "NCCL call failed"); \
  } while (0)

namespace graphrt::detail {
namespace {

static_assert(sizeof(ncclUniqueId) == kRendezvousBlobBytes, "the rendezvous blob carries one ncclUniqueId");

class NcclCollective final : public Collective {
 public:
  NcclCollective(Backend& backend, std::unique_ptr<Rendezvous> rv) : Collective(backend, std::move(rv)) {
    ncclUniqueId id;
    std::memcpy(&id, rv_->blob().data(), sizeof id);
    RT_NCCL_CHECK(ncclCommInitRank(&comm_, rv_->world(), id, rv_->rank()));
    start_watchdog();
  }
  // Abort, not destroy: it never waits for peers that may be gone.
  ~NcclCollective() override {
    stop_watchdog();
    if (comm_ != nullptr && !aborted_.exchange(true)) ncclCommAbort(comm_);
  }

  void all_reduce_sum(StreamRaw stream, float* buf, std::size_t count) override {
    RT_NCCL_CHECK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm_, reinterpret_cast<cudaStream_t>(stream)));
  }
  std::optional<std::size_t> nodes_per_call() const override { return std::nullopt; }

 protected:
  std::optional<std::string> async_error() noexcept override {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
    if (r != ncclSuccess) state = r;
    if (state == ncclSuccess || state == ncclInProgress) return std::nullopt;
    return std::string("NCCL asynchronous error: ") + ncclGetErrorString(state) + " (" + ncclGetLastError(comm_) + ")";
  }
  void abort_in_flight() noexcept override {
    if (!aborted_.exchange(true)) ncclCommAbort(comm_);
  }

 private:
  ncclComm_t comm_ = nullptr;
  std::atomic<bool> aborted_{false};
};

}  // namespace

RendezvousBlob nccl_unique_id_blob() {
  ncclUniqueId id;
  RT_NCCL_CHECK(ncclGetUniqueId(&id));
  RendezvousBlob blob{};
  std::memcpy(blob.data(), &id, sizeof id);
  return blob;
}

std::unique_ptr<Collective> make_nccl_collective(Backend& backend, std::unique_ptr<Rendezvous> rv) {
  return std::make_unique<NcclCollective>(backend, std::move(rv));
}

}  // namespace graphrt::detail
