// A workload: buffers allocated once when it is made (before any capture), a reset that puts the
// state back to the seed's (outside capture), and run_step — the launches of one step, the same
// call for eager mode and for capture.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "context.hpp"
#include "request.hpp"

namespace graphrt {

struct TrainReport {
  std::uint64_t launches = 0;    // L: kernel launches of one step (pin copies included)
  std::uint64_t pin_copies = 0;  // P: pin copies of one step
};

class Workload {
 public:
  virtual ~Workload() = default;
  // Uploads the seed's initial state and resets host-side mirrors of device state.
  virtual void reset(std::uint64_t seed) = 0;
  virtual void run_step(Context& ctx) = 0;
  // The bytes whose FNV-1a 64 is the step's output hash (a synchronous D2H copy).
  virtual std::vector<std::byte> output() = 0;
  // Toggles of the request that have no effect on this workload.
  virtual std::vector<std::string> inert_toggles() const = 0;
  virtual std::optional<TrainReport> train_report() const { return std::nullopt; }
};

// Which rank of how many this process is (multi-rank). decode with `allreduce` at world > 1 is a
// tensor-parallel shard: its MLP-up weights are the rank's own, and the all-reduce sums the shards.
struct Shard {
  int rank = 0;
  int world = 1;
};

class WeightShelf;  // workloads/decode.hpp: read-only weights shared within the process

// Allocates everything the workload's steps touch. `workload` is chain, decode or train. `shelf`
// (optional): where decode takes its read-only weights, shared with the process's other decode
// workloads of the same sizes and seed; without one the workload makes its own.
std::unique_ptr<Workload> make_workload(Backend& backend, const Request& req, Shard shard = {},
                                        WeightShelf* shelf = nullptr);

// Anything that sizes a grid or changes the launch list: a graph is reusable only under the same
// key (PROTOCOL.md: a change re-captures).
std::string capture_key(const Request& req);

// Deterministic initial data: values in [-scale, scale) from (seed, stream). Large counts are made
// on up to `threads` threads (0: the host's cores); the bytes do not depend on how many.
std::vector<float> seeded_floats(std::uint64_t seed, std::uint64_t stream, std::size_t count, float scale,
                                 std::size_t threads = 0);

}  // namespace graphrt
