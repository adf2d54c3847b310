// The one error family of graphrt. Every failure is an RtError carrying an Errc (which decides the
// protocol `code` and the process exit code), the backend's own error name (e.g.
// "cudaErrorStreamCaptureInvalidated", or the CPU backend's "StreamCaptureUnsupported"), the
// expression text and file:line. RT_CHECK / RT_THROW build it; backends add their own
// macros on top (RT_CUDA_CHECK in src/cuda/) that call rt_raise with their error name.
#pragma once

#include <stdexcept>
#include <string>

namespace graphrt {

enum class Errc {
  Internal,            // a bug in graphrt                              INTERNAL            exit 1
  BadFlag,             // unknown or malformed command-line flag        BAD_FLAG            exit 2
  BadRequest,          // malformed JSON request / bad field type       BAD_REQUEST         exit 2
  UnknownWorkload,     //                                               UNKNOWN_WORKLOAD    exit 2
  UnknownToggle,       //                                               UNKNOWN_TOGGLE      exit 2
  BadParam,            // a size out of range                           BAD_PARAM           exit 2
  BackendUnavailable,  // backend not built / no visible GPU            BACKEND_UNAVAILABLE exit 3
  CardBusy,            // --card-lock held elsewhere                    CARD_BUSY           exit 4
  GateFailed,          // run mode: identity gate failed                GATE_FAILED         exit 5
  DeviceError,         // sticky device error (kernel fault)            CUDA_ERROR          exit 6
  RankLost,            // multi-rank: a peer rank died, or never came   RANK_LOST           exit 7
  // Recoverable inside graphrt (never reach the process boundary on their own):
  CaptureFailed,       // an operation illegal during capture, an invalidated or unjoined capture
  CaptureRefused,      // recapture over a live graph, or capture without a fresh prepare
  InvalidValue,        // API misuse (bad handle, wrong args size, copy during capture ...)
};

// Protocol code (PROTOCOL.md "Error codes"). Recoverable codes map to INTERNAL if they escape.
const char* protocol_code(Errc e) noexcept;
// Process exit code for an error that ends the process.
int exit_code(Errc e) noexcept;

class RtError : public std::runtime_error {
 public:
  RtError(Errc errc, std::string name, const std::string& message)
      : std::runtime_error(message), errc_(errc), name_(std::move(name)) {}
  Errc errc() const noexcept { return errc_; }
  // The backend's error name, or the Errc's protocol code when there is none.
  const std::string& name() const noexcept { return name_; }

 private:
  Errc errc_;
  std::string name_;
};

// Throws RtError with a message "<detail> [<name>] (<expr> at <file>:<line>)".
[[noreturn]] void rt_raise(Errc errc, const std::string& name, const char* expr, const char* file,
                           int line, const std::string& detail);

}  // namespace graphrt

// Check a host-side condition; the message names the expression and where it was checked.
#define RT_CHECK(cond, errc, name, detail)                                              \
  do {                                                                                  \
    if (!(cond)) ::graphrt::rt_raise((errc), (name), #cond, __FILE__, __LINE__, (detail)); \
  } while (0)

#define RT_THROW(errc, name, detail) \
  ::graphrt::rt_raise((errc), (name), "", __FILE__, __LINE__, (detail))
