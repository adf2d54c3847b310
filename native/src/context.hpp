// The per-rank execution context and the ONE launch helper. Every kernel launch of every workload
// passes through launch<K>(): it counts the launch, appends it to the step's launch log and hands
// the Args bytes to the backend. Eager steps and captured steps call the same run_step(ctx), so a
// graph holds by construction the kernels, arguments and order an eager step launches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "graphrt/backend.hpp"
#include "graphrt/handles.hpp"
#include "graphrt/kernels.hpp"

namespace graphrt {

struct LaunchRecord {
  KernelId id;
  Dim3 grid;
  Dim3 block;
  StreamRaw stream;
};

class Collective;

class Context {
 public:
  explicit Context(Backend& backend);

  Backend& backend;
  StreamRaw compute;  // the blocking stream every step starts and ends on (capture origin)
  LaunchOpts opts;    // applied to every launch (pdl)
  bool overlap = false;

  // Counted by the launch helper / replay helper; never reset (probes read differences).
  std::uint64_t launches = 0;
  std::uint64_t dispatches = 0;
  // The launches and collective calls of the current step (cleared by begin_step).
  std::vector<LaunchRecord> step_log;
  std::size_t step_collectives = 0;
  void begin_step() {
    step_log.clear();
    step_collectives = 0;
  }

  // The rank's collective (multi-rank only; null at world 1). Owned by the Session.
  Collective* comm = nullptr;

  // The stream for work that may overlap the compute stream: the side stream under the overlap
  // toggle, else the compute stream. fork() makes it wait for the compute stream so far; join()
  // makes the compute stream wait for it. Both are no-ops without overlap.
  StreamRaw side() const { return overlap ? side_.get() : compute; }
  void fork();
  void join();

  // One replay of an instantiated graph: one dispatch, however many launches it holds.
  void replay(GraphExecRaw exec);

 private:
  Stream side_;
  Event fork_ev_;
  Event join_ev_;
};

inline constexpr std::uint32_t kBlock = 64;

// The launch helper. `n` threads in 1-D blocks of kBlock.
template <class K>
void launch(Context& ctx, StreamRaw stream, std::uint32_t n, const typename K::Args& args) {
  const Dim3 block{kBlock, 1, 1};
  const Dim3 grid{(n + kBlock - 1) / kBlock, 1, 1};
  constexpr KernelId id = KernelOf<K>::id;
  ctx.backend.launch(stream, id, grid, block, &args, sizeof(args), ctx.opts);
  ++ctx.launches;
  ++ctx.dispatches;
  ctx.step_log.push_back(LaunchRecord{id, grid, block, stream});
}

}  // namespace graphrt
