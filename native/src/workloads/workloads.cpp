#include <algorithm>
#include <cstdint>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

#include "../workload.hpp"
#include "graphrt/limits.hpp"
#include "chain.hpp"
#include "decode.hpp"
#include "train.hpp"

namespace graphrt {

namespace {

// Device bytes a workload allocates (within a few scratch vectors), by the terms of limits.json
// "device_bytes" (the same formula orch validate applies): refused above the backend's limit as a
// bad request rather than failing the allocation half way.
std::uint64_t device_bytes(const Request& req) {
  std::uint64_t bytes = 0;
  for (const auto& term : limits::kDeviceTerms) {
    if (term.workload != req.workload) continue;
    std::uint64_t product = term.coefficient;
    for (std::size_t i = 0; i < term.factor_count; ++i) product *= param_value(req.params, term.factors[i]);
    bytes += product;
  }
  return bytes;
}

std::uint64_t max_device_bytes(const std::string& backend) {
  for (const auto& b : limits::kMaxDeviceBytes)
    if (b.backend == backend) return b.max;
  RT_THROW(Errc::Internal, "", "limits.json device_bytes.max has no entry for backend \"" + backend + "\"");
}

}  // namespace

std::unique_ptr<Workload> make_workload(Backend& backend, const Request& req, Shard shard, WeightShelf* shelf) {
  const std::string on = backend.info().backend;
  if (const std::uint64_t bytes = device_bytes(req), max = max_device_bytes(on); bytes > max)
    user_error(Errc::BadParam, req.workload + ": these params need " + std::to_string(bytes) + " bytes (" +
                                   std::to_string(bytes >> 20) + " MiB) of device memory, more than graphrt's " +
                                   on + " limit of " + std::to_string(max) + " bytes (" + std::to_string(max >> 20) +
                                   " MiB); use smaller sizes");
  if (req.workload == "chain") return std::make_unique<ChainWorkload>(backend, req);
  if (req.workload == "decode") return std::make_unique<DecodeWorkload>(backend, req, shard, shelf);
  if (req.workload == "train") return std::make_unique<TrainWorkload>(backend, req);
  RT_THROW(Errc::Internal, "", "make_workload: not a steppable workload: " + req.workload);
}

std::string capture_key(const Request& req) {
  const Params& p = req.params;
  std::string key = req.workload;
  if (req.workload == "chain") key += "/k" + std::to_string(p.kernels) + "/n" + std::to_string(p.param_size);
  if (req.workload == "decode")
    key += "/l" + std::to_string(p.layers) + "/kpl" + std::to_string(p.kernels_per_layer) + "/h" +
           std::to_string(p.hidden) + "/mp" + std::to_string(p.max_pos);
  if (req.workload == "train") key += "/p" + std::to_string(p.params) + "/n" + std::to_string(p.param_size);
  for (const auto& t : toggles_on(req.toggles))
    if (t != "graph") key += "/" + t;
  return key;
}

namespace {

// splitmix64 is counter-based: the k-th draw (0-based) of a stream started at s0 is a function of
// s0 + (k + 1) * gamma alone, so any slice of the sequence can be made on its own thread and the
// bytes are those of the one sequential loop (the hashes of every test and A/A depend on them).
constexpr std::uint64_t kGamma = 0x9E3779B97F4A7C15ULL;

inline float seeded_value(std::uint64_t z, float scale) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return scale * (static_cast<float>(z >> 40) / static_cast<float>(1ULL << 24) * 2.0f - 1.0f);
}

void fill_slice(float* out, std::uint64_t s0, std::size_t begin, std::size_t end, float scale) {
  std::uint64_t s = s0 + static_cast<std::uint64_t>(begin) * kGamma;  // the state before draw `begin`
  for (std::size_t i = begin; i < end; ++i) out[i] = seeded_value(s += kGamma, scale);
}

}  // namespace

std::vector<float> seeded_floats(std::uint64_t seed, std::uint64_t stream, std::size_t count, float scale,
                                 std::size_t threads) {
  const std::uint64_t s0 = seed * kGamma + stream * 0xD1B54A32D192ED03ULL + 1;
  std::vector<float> out(count);
  // Decode 93 x hidden 256 draws 36.6 M floats per seed (~190 ms on one core): spread large
  // draws over the host's cores; small ones are not worth a thread.
  constexpr std::size_t kSlice = std::size_t{1} << 18;
  const std::size_t cores = threads > 0 ? threads : std::max(1U, std::thread::hardware_concurrency());
  const std::size_t parts = std::min(cores, (count + kSlice - 1) / kSlice);
  if (parts <= 1) {
    fill_slice(out.data(), s0, 0, count, scale);
    return out;
  }
  std::vector<std::thread> workers;
  workers.reserve(parts - 1);
  const std::size_t per = (count + parts - 1) / parts;
  auto slice = [&](std::size_t p) { fill_slice(out.data(), s0, std::min(count, p * per), std::min(count, (p + 1) * per), scale); };
  std::size_t p = 1;
  try {
    for (; p < parts; ++p) workers.emplace_back(slice, p);
  } catch (const std::system_error&) {  // no thread to be had: the rest is made on this one
  }
  for (std::size_t q = p; q < parts; ++q) slice(q);
  slice(0);
  for (auto& t : workers) t.join();
  return out;
}

}  // namespace graphrt
