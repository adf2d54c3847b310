// A request (PROTOCOL.md "Requests"): parsed from a serve-mode JSON line or from run-mode flags,
// validated once here so nothing downstream re-checks input.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graphrt/error.hpp"
#include "graphrt/limits.hpp"
#include "json.hpp"

namespace graphrt {

enum class Op { Rep, Identity, Probe, Hello };

// Defaults and ranges: limits.json (graphrt/limits.hpp is generated from it).
constexpr std::uint32_t param_default(std::string_view name) {
  return static_cast<std::uint32_t>(limits::param(name).def);
}

struct Params {
  std::uint32_t kernels = param_default("kernels");                      // chain
  std::uint32_t layers = param_default("layers");                        // decode
  std::uint32_t kernels_per_layer = param_default("kernels_per_layer");  // decode, >= kDecodeBaseKernels
  std::uint32_t hidden = param_default("hidden");                        // decode
  std::uint32_t max_pos = param_default("max_pos");                      // decode
  std::uint32_t params = param_default("params");                        // train
  std::uint32_t param_size = param_default("param_size");                // train, and chain's buffer length
};

struct Toggles {
  bool graph = false;
  bool pdl = false;
  bool overlap = false;
  bool split_combine = false;
  bool pin = false;
  bool freeze_pointer = false;
  bool lazy_init = false;
  bool allreduce = false;  // decode: one all-reduce per layer across the ranks (world > 1)
};

struct Request {
  std::string id = "0";
  Op op = Op::Rep;
  std::string arm;
  std::string workload = "decode";
  Params params;
  Toggles toggles;
  std::int64_t warmup = 2;
  std::int64_t steps = 8;
  std::int64_t replays = 7;
  std::uint64_t seed = 1;
};

inline constexpr std::uint32_t kDecodeBaseKernels = 9;
static_assert(limits::param("kernels_per_layer").min == kDecodeBaseKernels,
              "limits.json: kernels_per_layer.min must be the kernels a decode layer's work takes");

// Names, in protocol order.
const std::vector<std::string>& toggle_names();
const std::vector<std::string>& workload_names();
bool* toggle_field(Toggles& t, const std::string& name);
std::vector<std::string> toggles_on(const Toggles& t);

// A user error: RtError with the protocol code as its name and `message` as is (no file:line).
[[noreturn]] void user_error(Errc errc, const std::string& message);

Request request_from_json(const json::Value& v);
// args: the request flags of `graphrt run` (process options already removed).
Request request_from_flags(const std::vector<std::string>& args);
// A param's value by its limits.json name (the names device-byte terms use).
std::uint32_t param_value(const Params& p, std::string_view name);
// The id of a request line, if it can be read (for error lines about a bad request).
std::string request_id_of(const json::Value& v);

}  // namespace graphrt
