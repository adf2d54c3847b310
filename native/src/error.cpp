#include "graphrt/error.hpp"

namespace graphrt {

const char* protocol_code(Errc e) noexcept {
  switch (e) {
    case Errc::BadFlag: return "BAD_FLAG";
    case Errc::BadRequest: return "BAD_REQUEST";
    case Errc::UnknownWorkload: return "UNKNOWN_WORKLOAD";
    case Errc::UnknownToggle: return "UNKNOWN_TOGGLE";
    case Errc::BadParam: return "BAD_PARAM";
    case Errc::BackendUnavailable: return "BACKEND_UNAVAILABLE";
    case Errc::CardBusy: return "CARD_BUSY";
    case Errc::GateFailed: return "GATE_FAILED";
    case Errc::DeviceError: return "CUDA_ERROR";
    case Errc::RankLost: return "RANK_LOST";
    case Errc::Internal:
    case Errc::CaptureFailed:
    case Errc::CaptureRefused:
    case Errc::InvalidValue: return "INTERNAL";
  }
  return "INTERNAL";
}

int exit_code(Errc e) noexcept {
  switch (e) {
    case Errc::BadFlag:
    case Errc::BadRequest:
    case Errc::UnknownWorkload:
    case Errc::UnknownToggle:
    case Errc::BadParam: return 2;
    case Errc::BackendUnavailable: return 3;
    case Errc::CardBusy: return 4;
    case Errc::GateFailed: return 5;
    case Errc::DeviceError: return 6;
    case Errc::RankLost: return 7;
    default: return 1;
  }
}

void rt_raise(Errc errc, const std::string& name, const char* expr, const char* file, int line,
              const std::string& detail) {
  std::string msg = detail;
  if (!name.empty()) msg.append(" [").append(name).append("]");
  msg.append(" (");
  if (expr != nullptr && *expr != '\0') msg.append(expr).append(" at ");
  msg.append(file).append(":").append(std::to_string(line)).append(")");
  throw RtError(errc, name.empty() ? protocol_code(errc) : name, msg);
}

}  // namespace graphrt
