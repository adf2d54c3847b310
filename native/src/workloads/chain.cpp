#include "chain.hpp"

#include <cstring>

namespace graphrt {

ChainWorkload::ChainWorkload(Backend& backend, const Request& req)
    : backend_(backend), toggles_(req.toggles), kernels_(req.params.kernels), x_(backend, req.params.param_size) {}

void ChainWorkload::reset(std::uint64_t seed) {
  const auto init = seeded_floats(seed, 1, x_.size(), 1.0f);
  backend_.memcpy_h2d(x_.get(), init.data(), x_.bytes());
}

void ChainWorkload::run_step(Context& ctx) {
  const auto n = static_cast<std::uint32_t>(x_.size());
  for (std::uint32_t k = 0; k < kernels_; ++k) {
    // x -> +-x + b: no contraction (the state never settles to a fixed point), and the maps do
    // not commute, so a missing, repeated or reordered launch changes the hash.
    const float a = k % 3 == 0 ? -1.0f : 1.0f;
    const float b = 0.001f * static_cast<float>(k % 13 + 1);
    launch<kernels::ChainKernel>(ctx, ctx.compute, n, {x_.get(), n, a, b});
  }
}

std::vector<std::byte> ChainWorkload::output() {
  return x_.to_host_bytes();
}

std::vector<std::string> ChainWorkload::inert_toggles() const {
  std::vector<std::string> out;
  for (const auto& t : toggles_on(toggles_))
    if (t != "graph" && t != "pdl") out.push_back(t);
  return out;
}

}  // namespace graphrt
