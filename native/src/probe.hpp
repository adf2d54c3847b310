// The five capture probes of the `probe` workload (native/PROTOCOL.md), each a self-check that
// answers one `probe` line {name, pass, detail}:
//   launch_counter  the launch counter counts exactly the launches of a chain step, and replays
//                   add dispatches but no launches
//   unpinned_diverges  one graph of an unpinned train step diverges from the eager oracle
//                   (computed: the same steps run without a graph) — replay 1 agrees, replay 2 not
//   recapture_refusals  capture over a live graph and capture without a fresh prepare are both
//                   refused by name; destroy, prepare, capture then replays correctly
//   pinned_exact    a pinned train graph is bit-identical to eager over 8 steps at P = params
//   replay_dispatch a replay is one dispatch however many launches it holds (host time per
//                   launch vs per replay, measured, not asserted)
#pragma once

#include "graphrt/backend.hpp"
#include "lines.hpp"
#include "request.hpp"

namespace graphrt {

void run_probes(Backend& backend, const Request& req, const Emit& emit);

}  // namespace graphrt
