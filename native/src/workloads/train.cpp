#include "train.hpp"

#include <algorithm>

namespace graphrt {

TrainWorkload::TrainWorkload(Backend& b, const Request& req)
    : backend_(b),
      toggles_(req.toggles),
      count_(req.params.params),
      n_(req.params.param_size),
      current_(count_, nullptr),
      master_(b, std::size_t{count_} * n_),
      x_(b, std::size_t{count_} * n_),
      target_(b, std::size_t{count_} * n_),
      y_(b, std::size_t{count_} * n_),
      grad_(b, std::size_t{count_} * n_) {
  for (std::uint32_t p = 0; p < count_; ++p) pools_.push_back(std::make_unique<LifoPool>(b, 2, n_));
}

void TrainWorkload::reset(std::uint64_t seed) {
  const auto init = seeded_floats(seed, 11, master_.size(), 1.0f);
  const auto x = seeded_floats(seed, 12, x_.size(), 1.0f);
  const auto target = seeded_floats(seed, 13, target_.size(), 1.0f);
  backend_.memcpy_h2d(x_.get(), x.data(), x_.bytes());
  backend_.memcpy_h2d(target_.get(), target.data(), target_.bytes());
  for (std::uint32_t p = 0; p < count_; ++p) {
    pools_[p]->reset();
    const float* src = init.data() + std::size_t{p} * n_;
    if (toggles_.pin) {
      backend_.memcpy_h2d(master_.get() + std::size_t{p} * n_, src, n_ * sizeof(float));
      current_[p] = master_.get() + std::size_t{p} * n_;
    } else {
      current_[p] = pools_[p]->alloc();
      backend_.memcpy_h2d(current_[p], src, n_ * sizeof(float));
    }
  }
}

void TrainWorkload::run_step(Context& ctx) {
  namespace k = kernels;
  const StreamRaw s = ctx.compute;
  const float lr = 0.1f;
  std::uint64_t pins = 0;
  const std::size_t before = ctx.step_log.size();
  for (std::uint32_t p = 0; p < count_; ++p) {
    const std::size_t off = std::size_t{p} * n_;
    float* param = current_[p];  // the address as of this step: a kernel argument, frozen by capture
    launch<k::TrainForwardKernel>(ctx, s, n_, {param, x_.get() + off, y_.get() + off, n_});
    launch<k::TrainGradKernel>(ctx, s, n_, {y_.get() + off, x_.get() + off, target_.get() + off, grad_.get() + off, n_});
    float* next = pools_[p]->alloc();
    launch<k::SgdUpdateKernel>(ctx, s, n_, {param, grad_.get() + off, next, lr, n_});
    if (toggles_.pin) {
      launch<k::CopyKernel>(ctx, s, n_, {next, param, n_});  // param is the master buffer
      pools_[p]->free(next);
      ++pins;
    } else {
      pools_[p]->free(param);
      current_[p] = next;
    }
  }
  report_ = TrainReport{ctx.step_log.size() - before, pins};
}

std::vector<std::byte> TrainWorkload::output() {
  return y_.to_host_bytes();
}

std::vector<std::string> TrainWorkload::inert_toggles() const {
  std::vector<std::string> out;
  for (const auto& t : toggles_on(toggles_))
    if (t == "overlap" || t == "split_combine" || t == "freeze_pointer" || t == "lazy_init" || t == "allreduce")
      out.push_back(t);
  return out;
}

}  // namespace graphrt
