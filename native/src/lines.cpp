#include "lines.hpp"

#include <unistd.h>

namespace graphrt {

json::Obj line(const char* type, const std::optional<std::string>& id) {
  json::Obj o;
  o.put("v", 1).put("type", type);
  if (id) o.put("id", *id);
  return o;
}

std::string hello_line(const DeviceInfo& info, Shard shard, const std::optional<std::string>& id, bool final) {
  json::Obj features;
  features.put("graph", info.features.graph)
      .put("pdl", info.features.pdl)
      .put("overlap", info.features.overlap)
      .put("collectives", info.features.collectives);
  json::Obj o = line("hello", id);
  o.put("backend", info.backend).put("device", info.device);
  if (info.sm) o.put("sm", *info.sm);
  else o.put_null("sm");
  o.put("sms", info.sms)
      .put("driver", info.driver)
      .put_raw("features", features.str())
      .put("version", kVersion)
      .put("pid", static_cast<std::int64_t>(::getpid()))
      .put("world", shard.world)
      .put("rank", shard.rank);
  if (final) o.put("final", true);
  return o.str();
}

std::string capture_line(const Request& req, const CaptureOutcome& c,
                         const std::optional<std::vector<int>>& failed_ranks) {
  json::Obj o = line("capture", req.id);
  o.put("arm", req.arm).put("ok", c.ok);
  if (failed_ranks) {
    std::string ranks = "[";
    for (std::size_t i = 0; i < failed_ranks->size(); ++i) ranks += (i ? "," : "") + std::to_string((*failed_ranks)[i]);
    o.put_raw("failed_ranks", ranks + "]");
  }
  if (c.ok) {
    o.put("nodes", static_cast<std::uint64_t>(c.nodes))
        .put("launches", static_cast<std::uint64_t>(c.launches))
        .put("capture_ms", c.capture_ms)
        .put("instantiate_ms", c.instantiate_ms);
  } else {
    o.put("reason", c.reason).put("fallback", "eager");
  }
  return o.str();
}

std::optional<std::uint64_t> ecc_during(std::optional<std::uint64_t> start, std::optional<std::uint64_t> end) {
  if (!start || !end) return std::nullopt;
  return *end >= *start ? *end - *start : *end;
}

std::string clocks_json(const ClockReading& start, const ClockReading& end) {
  auto one = [](const ClockReading& c) {
    json::Obj o;
    o.put("sm_mhz", c.sm_mhz).put("mem_mhz", c.mem_mhz).put("temp_c", c.temp_c).put("power_w", c.power_w)
        .put("reasons", c.reasons);
    return o.str();
  };
  json::Obj o;
  o.put_raw("start", one(start)).put_raw("end", one(end));
  return o.str();
}

std::string error_line(const std::optional<std::string>& id, const RtError& e) {
  json::Obj o = line("error", id);
  o.put("code", protocol_code(e.errc()))
      .put("message", e.what())
      .put("exit_code", exit_code(e.errc()))
      .put("final", true);
  return o.str();
}

}  // namespace graphrt
