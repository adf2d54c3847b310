// The protocol's output lines (PROTOCOL.md "Lines"), each built in one place. Every line has
// "v":1 and "type"; answers to a request echo its "id".
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "graph_slot.hpp"
#include "graphrt/backend.hpp"
#include "graphrt/error.hpp"
#include "json.hpp"
#include "request.hpp"
#include "workload.hpp"

namespace graphrt {

inline constexpr const char* kVersion = "0.1.0";

// Where lines go: stdout, flushed per line (main), or a vector (tests).
using Emit = std::function<void(const std::string& line)>;

json::Obj line(const char* type, const std::optional<std::string>& id = std::nullopt);

std::string hello_line(const DeviceInfo& info, Shard shard, const std::optional<std::string>& id, bool final);
// `failed_ranks`: the vote's outcome (multi-rank only): the ranks whose capture failed.
std::string capture_line(const Request& req, const CaptureOutcome& c,
                         const std::optional<std::vector<int>>& failed_ranks = std::nullopt);
// A rep's `clocks`: {"start":{...},"end":{...}}, each {sm_mhz, mem_mhz, temp_c, power_w, reasons}.
std::string clocks_json(const ClockReading& start, const ClockReading& end);

// A rep's `ecc_errors`: the device's volatile uncorrected ECC count after the rep less before it;
// none unless both were read. A count that went down (the driver reloaded) is taken whole.
std::optional<std::uint64_t> ecc_during(std::optional<std::uint64_t> start, std::optional<std::uint64_t> end);
std::string error_line(const std::optional<std::string>& id, const RtError& e);

}  // namespace graphrt
