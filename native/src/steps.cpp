#include "steps.hpp"

#include "hash.hpp"

namespace graphrt {

StepRun run_steps(Context& ctx, Workload& w, GraphSlot* slot, std::int64_t warmup, std::int64_t count) {
  Backend& b = ctx.backend;
  Event start = make_event(b);
  Event end = make_event(b);
  StepRun run;
  for (std::int64_t i = 0; i < warmup + count; ++i) {
    const std::uint64_t d0 = ctx.dispatches;
    b.event_record(start.get(), ctx.compute);
    if (slot != nullptr) {
      slot->replay(ctx);
    } else {
      ctx.begin_step();
      w.run_step(ctx);
    }
    b.event_record(end.get(), ctx.compute);
    const std::uint64_t dispatched = ctx.dispatches - d0;
    const float ms = b.event_elapsed_ms(start.get(), end.get());
    const std::vector<std::byte> out = w.output();
    if (i == 0) {
      run.first_launches = slot != nullptr ? slot->launches() : ctx.step_log.size();
      run.first_collectives = slot != nullptr ? slot->collectives() : ctx.step_collectives;
    }
    if (i < warmup) {
      run.warmup_ms.push_back(ms);
      continue;
    }
    run.step_ms.push_back(ms);
    run.hashes.push_back(fnv1a64_hex(out.data(), out.size()));
    run.dispatches = dispatched;
    run.launches = slot != nullptr ? slot->launches() : ctx.step_log.size();
    run.collectives = slot != nullptr ? slot->collectives() : ctx.step_collectives;
  }
  return run;
}

double settle_launch_state(Context& ctx, Workload& w, std::uint64_t seed) {
  const bool arm_pdl = ctx.opts.pdl;
  ctx.opts.pdl = ctx.backend.info().features.pdl;
  w.reset(seed);
  double ms = 0;
  try {
    ms = run_steps(ctx, w, nullptr, 1, 0).warmup_ms.at(0);
  } catch (...) {
    ctx.opts.pdl = arm_pdl;
    throw;
  }
  ctx.opts.pdl = arm_pdl;
  w.reset(seed);
  return ms;
}

std::size_t first_difference(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (std::size_t k = 0; k < a.size() || k < b.size(); ++k)
    if (k >= a.size() || k >= b.size() || a[k] != b[k]) return k + 1;
  return 0;
}

}  // namespace graphrt
