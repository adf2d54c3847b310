// The CUDA build's all-reduce: ncclAllReduce in place on the stream the step runs on
// (orch_rank::stream()), so that inside orch_rank::graph's capture it is a node of the step's
// graph and every replay reduces again. The communicator's NCCL unique id comes from rank 0
// through orch's exchange (orch_rank::nccl_unique_id()). A gang of one has nothing to reduce and
// makes no NCCL call, so a build without nccl.h (examples/cuda-tp/build-cuda.sh leaves out
// ORCH_RANK_NCCL then) serves WORLD_SIZE 1 and refuses more ranks with the fix.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "orch_rank.h"

namespace cuda_tp {

#if defined(ORCH_RANK_NCCL)
inline void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string("all-reduce: ") + what + ": " + ncclGetErrorString(r));
}
#endif

class NcclAllreduce {
 public:
  NcclAllreduce(int rank, int world) : world_(world) {
    if (world_ == 1) return;
#if defined(ORCH_RANK_NCCL)
    const ncclUniqueId id = orch_rank::nccl_unique_id();
    nccl_check(ncclCommInitRank(&comm_, world_, id, rank), "ncclCommInitRank");
#else
    (void)rank;
    throw std::invalid_argument("cuda-tp: a gang of " + std::to_string(world_) +
                                " ranks needs NCCL, and this binary was built without it (no nccl.h where "
                                "examples/cuda-tp/build-cuda.sh looked): install NCCL's headers and library "
                                "(libnccl-dev, or set NCCL_HOME) and rebuild, or run blocks.ranks: 1");
#endif
  }
  NcclAllreduce(const NcclAllreduce&) = delete;
  NcclAllreduce& operator=(const NcclAllreduce&) = delete;
  ~NcclAllreduce() {
#if defined(ORCH_RANK_NCCL)
    if (comm_ != nullptr) (void)ncclCommDestroy(comm_);
#endif
  }

  // Enqueues buf (n floats on the device) := its sum over the gang's ranks on orch_rank::stream().
  void sum(float* buf, std::size_t n) {
    if (world_ == 1) return;
#if defined(ORCH_RANK_NCCL)
    nccl_check(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, comm_, orch_rank::stream()), "ncclAllReduce");
#else
    (void)buf;
    (void)n;
#endif
  }

 private:
  int world_;
#if defined(ORCH_RANK_NCCL)
  ncclComm_t comm_ = nullptr;
#endif
};

}  // namespace cuda_tp
