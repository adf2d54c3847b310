// chain: `kernels` trivial launches per step on a buffer of `param_size` floats.
#pragma once

#include "../workload.hpp"

namespace graphrt {

class ChainWorkload final : public Workload {
 public:
  ChainWorkload(Backend& backend, const Request& req);
  void reset(std::uint64_t seed) override;
  void run_step(Context& ctx) override;
  std::vector<std::byte> output() override;
  std::vector<std::string> inert_toggles() const override;

 private:
  Backend& backend_;
  Toggles toggles_;
  std::uint32_t kernels_;
  DeviceBuffer<float> x_;
};

}  // namespace graphrt
