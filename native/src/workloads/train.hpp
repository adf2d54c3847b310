// train: `params` parameters of `param_size` floats. Per parameter and step: forward, gradient,
// and an out-of-place SGD update into a new block of the parameter's LIFO pool, the old block
// freed — so the parameter's address alternates and an unpinned graph, which baked the address
// it saw at capture, keeps training the stale block. With `pin` the forward and the update read
// a master buffer and one copy per parameter writes the update back into it (P = params).
// Output: the forward outputs of all parameters (they show the weights the step trained on).
#pragma once

#include <memory>

#include "../workload.hpp"
#include "lifo_pool.hpp"

namespace graphrt {

class TrainWorkload final : public Workload {
 public:
  TrainWorkload(Backend& backend, const Request& req);
  void reset(std::uint64_t seed) override;
  void run_step(Context& ctx) override;
  std::vector<std::byte> output() override;
  std::vector<std::string> inert_toggles() const override;
  std::optional<TrainReport> train_report() const override { return report_; }

  // The address parameter `p` lives at now (where the host believes it is).
  const float* param_address(std::size_t p) const { return current_[p]; }

 private:
  Backend& backend_;
  Toggles toggles_;
  std::uint32_t count_, n_;
  std::vector<std::unique_ptr<LifoPool>> pools_;  // one per parameter, two blocks each
  std::vector<float*> current_;
  DeviceBuffer<float> master_, x_, target_, y_, grad_;
  std::optional<TrainReport> report_;
};

}  // namespace graphrt
