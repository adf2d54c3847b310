// The kernel table: every kernel graphrt launches, by id. A kernel is a POD `Args` struct and an
// `RT_HD static void body(const ThreadCtx&, const Args&)` (kernels/*.hpp), written once for g++
// and nvcc. A backend maps a KernelId to its implementation by expanding GRAPHRT_KERNEL_LIST:
//   CPU:  body() for every block x thread of the grid, on the stream's device thread.
//   CUDA: template<class K> __global__ void k(typename K::Args a) {
//           cudaGridDependencySynchronize(); K::body(ThreadCtx{...}, a); }   (no-op without PDL)
// The launch helper (src/launch.hpp) checks that the args bytes it passes have the size of the
// id's Args, so a backend may reinterpret them as `const K::Args*`.
#pragma once

#include <cstddef>
#include <cstdint>

#include "graphrt/kernels/chain.hpp"
#include "graphrt/kernels/decode.hpp"
#include "graphrt/kernels/train.hpp"

// X(Id, KernelStruct, "name") — the one list. Append only; ids are indices into it.
#define GRAPHRT_KERNEL_LIST(X)                                   \
  X(Chain, ::graphrt::kernels::ChainKernel, "chain")             \
  X(Embed, ::graphrt::kernels::EmbedKernel, "embed")             \
  X(RmsNorm, ::graphrt::kernels::RmsNormKernel, "rms_norm")      \
  X(Matvec, ::graphrt::kernels::MatvecKernel, "matvec")          \
  X(KvWrite, ::graphrt::kernels::KvWriteKernel, "kv_write")      \
  X(AttnScores, ::graphrt::kernels::AttnScoresKernel, "attn_scores") \
  X(AttnCombine, ::graphrt::kernels::AttnCombineKernel, "attn_combine") \
  X(Bias, ::graphrt::kernels::BiasKernel, "bias")                \
  X(AdvancePos, ::graphrt::kernels::AdvancePosKernel, "advance_pos") \
  X(TrainForward, ::graphrt::kernels::TrainForwardKernel, "train_forward") \
  X(TrainGrad, ::graphrt::kernels::TrainGradKernel, "train_grad") \
  X(SgdUpdate, ::graphrt::kernels::SgdUpdateKernel, "sgd_update") \
  X(Copy, ::graphrt::kernels::CopyKernel, "copy")                \
  X(AttnPartial, ::graphrt::kernels::AttnPartialKernel, "attn_partial") \
  X(AttnMerge, ::graphrt::kernels::AttnMergeKernel, "attn_merge")

namespace graphrt {

enum class KernelId : std::uint32_t {
#define GRAPHRT_KERNEL_ENUM(id, type, name) id,
  GRAPHRT_KERNEL_LIST(GRAPHRT_KERNEL_ENUM)
#undef GRAPHRT_KERNEL_ENUM
      Count
};

inline constexpr std::size_t kKernelCount = static_cast<std::size_t>(KernelId::Count);

struct KernelDesc {
  KernelId id;
  const char* name;
  std::size_t args_size;
};

inline constexpr KernelDesc kKernelTable[kKernelCount] = {
#define GRAPHRT_KERNEL_DESC(id, type, name) {KernelId::id, name, sizeof(type::Args)},
    GRAPHRT_KERNEL_LIST(GRAPHRT_KERNEL_DESC)
#undef GRAPHRT_KERNEL_DESC
};

inline constexpr const KernelDesc& kernel_desc(KernelId id) {
  return kKernelTable[static_cast<std::size_t>(id)];
}

// KernelOf<Type>::id — the id of a kernel struct, for the typed launch helper.
template <class K>
struct KernelOf;
#define GRAPHRT_KERNEL_OF(id_, type, name) \
  template <>                              \
  struct KernelOf<type> {                  \
    static constexpr KernelId id = KernelId::id_; \
  };
GRAPHRT_KERNEL_LIST(GRAPHRT_KERNEL_OF)
#undef GRAPHRT_KERNEL_OF

}  // namespace graphrt
