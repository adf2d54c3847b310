#include <cstdint>
#include <memory>

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

std::unique_ptr<Workload> make_workload(Backend& backend, const Request& req, Shard shard) {
  const std::string on = backend.info().backend;
  if (const std::uint64_t bytes = device_bytes(req), max = max_device_bytes(on); bytes > max)
    user_error(Errc::BadParam, req.workload + ": these params need " + std::to_string(bytes) + " bytes (" +
                                   std::to_string(bytes >> 20) + " MiB) of device memory, more than graphrt's " +
                                   on + " limit of " + std::to_string(max) + " bytes (" + std::to_string(max >> 20) +
                                   " MiB); use smaller sizes");
  if (req.workload == "chain") return std::make_unique<ChainWorkload>(backend, req);
  if (req.workload == "decode") return std::make_unique<DecodeWorkload>(backend, req, shard);
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

std::vector<float> seeded_floats(std::uint64_t seed, std::uint64_t stream, std::size_t count, float scale) {
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ULL + stream * 0xD1B54A32D192ED03ULL + 1;
  std::vector<float> out(count);
  for (auto& v : out) {  // splitmix64
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    v = scale * (static_cast<float>(z >> 40) / static_cast<float>(1ULL << 24) * 2.0f - 1.0f);
  }
  return out;
}

}  // namespace graphrt
