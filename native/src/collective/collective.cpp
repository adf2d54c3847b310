#include "collective.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "context.hpp"

namespace graphrt {
namespace {

std::atomic<CollectiveFatal> fatal_handler{nullptr};

}  // namespace

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
  if (const CollectiveFatal h = fatal_handler.load()) {
    h(e);
  } else {
    std::fprintf(stderr, "graphrt: %s: %s\n", protocol_code(e.errc()), e.what());
  }
  std::fflush(nullptr);
  std::_Exit(exit_code(e.errc()));
}

}  // namespace graphrt
