// Running steps of a workload, eager or as graph replays, with device-side timing and the
// per-step output hash. The one loop the session, the identity gate and the probes share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "context.hpp"
#include "graph_slot.hpp"
#include "workload.hpp"

namespace graphrt {

struct StepRun {
  std::vector<double> step_ms;      // measured steps, from events on the compute stream
  std::vector<double> warmup_ms;    // warm-up steps, the same way (card time, not a measurement)
  std::vector<std::string> hashes;  // measured steps, FNV-1a 64 of the output after each step
  std::uint64_t launches = 0;       // of one step (eager: launched; graph: nodes held)
  std::uint64_t dispatches = 0;     // host submissions of one step
  std::uint64_t collectives = 0;    // collective calls of one step
  // Of the first step run (warm-up included): from a reset state, the count a capture must match.
  std::uint64_t first_launches = 0;
  std::uint64_t first_collectives = 0;
};

// Runs warmup + count steps from the workload's current state; `slot` null runs eager steps,
// else replays its live graph. Each step: record start, step, record end, then (outside any
// capture) a synchronous D2H of the output, hashed on the host.
StepRun run_steps(Context& ctx, Workload& w, GraphSlot* slot, std::int64_t warmup, std::int64_t count);

// The settle (BENCHMARKS.md, "The launch state a rep inherits"): on the H200, graph replays ran
// 18-22 % slower after eager launches made without the PDL attribute, with PDL edges or without,
// and kept that state until an eager PDL launch, so a graph arm's speed depended on what ran
// before it. This runs one eager step of the workload's arm with PDL on (where the backend has
// it; PDL changes no bit) from the seed's state, and resets to the seed's state again (the
// identity gate's eager, reset, replay sequence): graph replays after it meet the same launch
// state whatever ran before. Returns the step's device time (card time, not a measurement).
double settle_launch_state(Context& ctx, Workload& w, std::uint64_t seed);

// The 1-based index of the first differing hash, or 0 when the two agree.
std::size_t first_difference(const std::vector<std::string>& a, const std::vector<std::string>& b);

}  // namespace graphrt
